from django.db import migrations, models
from django.db.models import deletion

# The index Django made for the foreign key (its name is a hash of the table and column,
# the same on every backend). Dropped by name: an AlterField would make SQLite copy the
# whole run table to remove one index. Only where the product runs (SQLite, PostgreSQL):
# MySQL needs an index for a foreign key, and would refuse.
INDEX = "schedules_run_schedule_id_88c5cda1"
BACKENDS = ("sqlite", "postgresql")


def drop_index(apps, schema_editor) -> None:
    if schema_editor.connection.vendor in BACKENDS:
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(INDEX)}")


def create_index(apps, schema_editor) -> None:
    if schema_editor.connection.vendor in BACKENDS:
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {schema_editor.quote_name(INDEX)} "
            'ON "schedules_run" ("schedule_id")'
        )


class Migration(migrations.Migration):
    dependencies = [
        ("schedules", "0025_schedule_follow_ups_idx"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="run",
                    name="schedule",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=deletion.SET_NULL,
                        related_name="runs",
                        to="schedules.schedule",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunPython(drop_index, create_index),
            ],
        ),
    ]
