"""System checks: task declarations, kwargs that no longer fit, and the deployment's key.

Declaration problems are warnings: `manage.py check` prints them and
`check --fail-level WARNING` fails on them (CI should run that), but they never
stop `migrate`, `runscheduler` or the CLI: a duplicate or a broken task module
is excluded and flagged while every other task keeps running.
"""

from __future__ import annotations

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import DatabaseError

from .models import Schedule
from .registry import registry
from .validation import kwargs_fit


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
                    id="schedules.W005",
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
def check_stored_kwargs(app_configs: object = None, **kwargs: object) -> list:
    """Schedules whose kwargs no longer fit their task's signature (the code changed):
    a warning on `manage.py check` (their runs fail, once per slot, until fixed).

    It reads the database, which a plain check usually does not: this is the
    moment a deployment learns that new code no longer fits stored records. A
    database that is not there or not migrated yet has nothing to check.
    """
    try:
        rows = list(
            Schedule.objects.filter(task_name__in=sorted(registry.runnable_names())).values_list(
                "code", "task_name", "kwargs"
            )
        )
    except DatabaseError:
        return []  # not migrated yet: nothing stored to check
    warnings = []
    for code, task_name, value in rows:
        problem = kwargs_fit(task_name, value, registry)
        if problem:
            warnings.append(
                Warning(
                    f"schedule '{code}': {problem}",
                    hint="Edit its kwargs (dashboard, admin or CLI); its runs fail until then.",
                    id="schedules.W004",
                )
            )
    return warnings


@register(Tags.security, deploy=True)
def check_secret_key_from_environment(app_configs: object = None, **kwargs: object) -> list:
    """Outside DEBUG the key must come from DJANGO_SECRET_KEY: a key generated in each
    host's data folder differs per host, so sessions and signatures break between them."""
    if settings.DEBUG or getattr(settings, "SILLO_SECRET_KEY_FROM_ENV", True):
        return []
    return [
        Error(
            "DJANGO_SECRET_KEY is not set: this process uses a key generated in its data folder",
            hint="Set DJANGO_SECRET_KEY to the same long random value on every host.",
            id="schedules.E010",
        )
    ]
