"""The app config: checks registered and task modules discovered once Django is ready."""

from __future__ import annotations

from django.apps import AppConfig, apps
from django.db import connections
from django.db.migrations.recorder import MigrationRecorder
from django.db.models.signals import post_migrate

from .registry import autodiscover


class SchedulesConfig(AppConfig):
    name = "schedules"
    verbose_name = "Schedules"

    def ready(self) -> None:
        # Registering checks is ready()'s job (Django's convention): importing registers them.
        from . import checks  # noqa: F401

        autodiscover([config.name for config in apps.get_app_configs()])
        post_migrate.connect(restore_triggers, sender=self)


def restore_triggers(using: str, plan: list | None = None, **kwargs: object) -> None:
    """After a migrate that applied any of this app's migrations: one that alters the
    schedules or runs table makes SQLite rebuild it without its triggers (the search
    index's, schedules/search.py; the run tallies', schedules/run_tallies.py)."""
    # They read models: not before ready().
    from . import run_tallies, search

    if not plan or not any(migration.app_label == "schedules" for migration, _ in plan):
        return  # a flush (tests), or nothing of ours changed
    connection = connections[using]
    applied = MigrationRecorder(connection).applied_migrations()
    if search.INSTALLED_BY in applied:
        search.ensure_index(connection)
    if run_tallies.INSTALLED_BY in applied:
        run_tallies.ensure_triggers(connection)
