# Each schedule's finished runs per quarter hour, kept by triggers on the run table
# (schedules/run_tallies.py), and counted once from the runs already kept.

from django.db import migrations, models


def forwards(apps, schema_editor) -> None:
    from schedules.run_tallies import ensure_triggers  # the current code, read only when it runs

    ensure_triggers(schema_editor.connection)


def backwards(apps, schema_editor) -> None:
    from schedules.run_tallies import drop_triggers  # as above

    drop_triggers(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("schedules", "0022_schedule_search"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("schedule_id", models.BigIntegerField()),
                (
                    "quarter",
                    models.BigIntegerField(help_text="the quarter hour: Unix seconds // 900 (UTC)"),
                ),
                ("runs", models.IntegerField(default=0)),
                ("succeeded", models.IntegerField(default=0)),
                ("errors", models.IntegerField(default=0)),
            ],
            options={
                "indexes": [models.Index(fields=["quarter"], name="run_tally_age_idx")],
                "constraints": [
                    models.UniqueConstraint(fields=("schedule_id", "quarter"), name="run_tally_key")
                ],
            },
        ),
        migrations.RunPython(forwards, backwards, elidable=False),
    ]
