from __future__ import annotations

from django.apps import AppConfig, apps


class SchedulesConfig(AppConfig):
    name = "schedules"
    verbose_name = "Schedules"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
        from .registry import autodiscover

        autodiscover([config.name for config in apps.get_app_configs()])
