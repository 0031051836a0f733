from django.db import migrations, models

# The indexes Django made for Run.scheduler (db_index): the plain one, and on PostgreSQL
# its LIKE twin. Dropped by name, as 0026 does: an AlterField would make SQLite copy the
# whole run table. Only where the product runs (SQLite, PostgreSQL).
INDEXES = ("schedules_run_scheduler_433763c6", "schedules_run_scheduler_433763c6_like")
BACKENDS = ("sqlite", "postgresql")


def drop_indexes(apps, schema_editor) -> None:
    if schema_editor.connection.vendor in BACKENDS:
        for name in INDEXES:
            schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


def create_indexes(apps, schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in BACKENDS:
        return
    plain, like = (schema_editor.quote_name(name) for name in INDEXES)
    schema_editor.execute(f'CREATE INDEX IF NOT EXISTS {plain} ON "schedules_run" ("scheduler")')
    if vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS {like} ON "schedules_run" ("scheduler" varchar_pattern_ops)'
        )


class Migration(migrations.Migration):
    dependencies = [
        ("schedules", "0026_run_schedule_no_plain_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="run",
                    name="scheduler",
                    field=models.CharField(blank=True, max_length=64),
                ),
            ],
            database_operations=[
                migrations.RunPython(drop_indexes, create_indexes),
            ],
        ),
    ]
