# A trigram index for the schedule search (schedules/search.py): FTS5 on SQLite,
# pg_trgm on PostgreSQL. Raw SQL, as Django has no model for either.

from django.db import migrations


def forwards(apps, schema_editor) -> None:
    from schedules.search import ensure_index  # the current code, read only when it runs

    ensure_index(schema_editor.connection)


def backwards(apps, schema_editor) -> None:
    from schedules.search import drop_index  # as above

    drop_index(schema_editor.connection)


class Migration(migrations.Migration):
    atomic = False  # CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("schedules", "0021_schedule_task_idx"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards, elidable=False),
    ]
