# The queued runs of the tasks that wait for a worker, read by their own partial index.

from importlib import import_module

from django.db import migrations, models

# Built online on PostgreSQL, as 0019's indexes are.
AddIndexOnline = import_module("schedules.migrations.0019_run_inflight_indexes").AddIndexOnline


class Migration(migrations.Migration):
    atomic = False  # CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("schedules", "0019_run_inflight_indexes"),
    ]

    operations = [
        AddIndexOnline(
            model_name="run",
            index=models.Index(
                condition=models.Q(("status", "queued")),
                fields=["task_name", "not_before"],
                name="run_queued_task_idx",
            ),
        ),
    ]
