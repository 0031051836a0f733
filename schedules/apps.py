"""The app config: checks registered and task modules discovered once Django is ready."""

from __future__ import annotations

from django.apps import AppConfig, apps

from .registry import autodiscover


class SchedulesConfig(AppConfig):
    name = "schedules"
    verbose_name = "Schedules"

    def ready(self) -> None:
        # Registering checks is ready()'s job (Django's convention): importing registers them.
        from . import checks  # noqa: F401

        autodiscover([config.name for config in apps.get_app_configs()])
