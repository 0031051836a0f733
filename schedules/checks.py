"""System checks for task declarations, all at warning level.

`manage.py check` prints them and `check --fail-level WARNING` fails on them
(CI should run that), but they never stop `migrate`, `runscheduler` or the
CLI: a duplicate or a broken task module is excluded and flagged while every
other task keeps running, so a deploy is never blocked by one bad task.
"""

from __future__ import annotations

from django.core.checks import CheckMessage, Warning, register

from .notify.targets import env_problems
from .registry import registry


@register("schedules")
def check_task_declarations(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
    errors = []
    for name in sorted(registry.duplicate_names()):
        places = ", ".join(d.qualname for d in registry.declarations[name])
        errors.append(
            Warning(
                f"task '{name}' is declared more than once: {places}",
                hint="Rename one; every declaration of a duplicate name is excluded from runs.",
                id="schedules.W001",
            )
        )
    for declaration in registry.all():
        for problem in declaration.problems:
            errors.append(
                Warning(
                    f"task '{declaration.name}' ({declaration.qualname}): {problem}",
                    id="schedules.W002",
                )
            )
    for declaration in registry.all():
        if declaration.worker_problem:
            errors.append(
                Warning(
                    f"task '{declaration.name}': {declaration.worker_problem}",
                    hint="Its runs would fail in the worker process with this reason.",
                    id="schedules.W004",
                )
            )
    for module, failure in sorted(registry.failed_imports.items()):
        errors.append(
            Warning(
                f"task module {module} failed to import: {failure}",
                hint="Its tasks are missing; their schedules show as orphans until it is fixed.",
                id="schedules.W003",
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
