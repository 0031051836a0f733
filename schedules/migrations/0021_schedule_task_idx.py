# The schedules' task names, one index seek each: how orphans are found.

from importlib import import_module

from django.db import migrations, models

# Built online on PostgreSQL, as 0019's indexes are.
AddIndexOnline = import_module("schedules.migrations.0019_run_inflight_indexes").AddIndexOnline


class Migration(migrations.Migration):
    atomic = False  # CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("schedules", "0020_run_queued_task_idx"),
    ]

    operations = [
        AddIndexOnline(
            model_name="schedule",
            index=models.Index(
                fields=["task_name"],
                name="schedule_task_idx",
                # Partial, so the scheduler's due query keeps schedule_due_idx (models.py).
                condition=models.Q(task_name__gte=""),
            ),
        ),
    ]
