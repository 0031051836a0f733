"""System checks for task declarations: `manage.py check` fails on these."""

from __future__ import annotations

from django.core.checks import CheckMessage, Error, Warning, register

from .registry import registry


@register("schedules")
def check_task_declarations(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
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
            Error(
                f"task module {module} failed to import: {failure}",
                hint="Its tasks are missing; their schedules show as orphans until it is fixed.",
                id="schedules.E003",
            )
        )
    return errors
