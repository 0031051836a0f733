"""System checks for task declarations: `manage.py check` fails on these."""

from __future__ import annotations

from django.core.checks import Error, Warning, register

from .notify.targets import env_problems
from .registry import registry


@register("schedules")
def check_task_declarations(app_configs: object = None, **kwargs: object) -> list[Error]:
    errors = []
    for name in sorted(registry.duplicate_names()):
        places = ", ".join(d.qualname for d in registry.declarations[name])
        errors.append(
            Error(
                f"task '{name}' is declared more than once: {places}",
                hint="Rename one; every declaration of a duplicate name is excluded from runs.",
                id="schedules.E001",
            )
        )
    for declaration in registry.all():
        for problem in declaration.problems:
            errors.append(
                Error(
                    f"task '{declaration.name}' ({declaration.qualname}): {problem}",
                    id="schedules.E002",
                )
            )
    for module, failure in sorted(registry.failed_imports.items()):
        errors.append(
            Error(
                f"task module {module} failed to import: {failure}",
                hint="Its tasks are missing; their schedules show as orphans until it is fixed.",
                id="schedules.E003",
            )
        )
    return errors


@register("schedules")
def check_notify_urls(app_configs: object = None, **kwargs: object) -> list[Warning]:
    """A SILLO_NOTIFY URL that no channel kind accepts is skipped; say so at start-up."""
    return [
        Warning(
            f"SILLO_NOTIFY: {problem}",
            hint="docs/alerts.md lists the URL forms.",
            id="schedules.W010",
        )
        for problem in env_problems()
    ]
