"""System checks: task declarations, stored kwargs, the deployment's key, and what a
host project is missing.

Task declarations are all at warning level: `manage.py check` prints them and
`check --fail-level WARNING` fails on them (CI should run that), but they
never stop `migrate`, `runscheduler` or the CLI: a duplicate or a broken task
module is excluded and flagged while every other task keeps running, so a
deploy is never blocked by one bad task.

A host's missing app, middleware or template engine is an error (E010-E012):
the pages would fail at their first request, so `check` names the exact
setting instead. No channel layer is a warning (W010): live updates are off.
"""

from __future__ import annotations

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import DatabaseError, connections, router
from django.utils.module_loading import import_string

from . import chains, defaults
from .conf import metrics_label_limit
from .models import RunTally, Schedule
from .notify.targets import env_problems
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


@register("schedules")
def check_declared_chains(app_configs: object = None, **kwargs: object) -> list:
    """Follow-ups declared in code (`then=` / `catch=`): a code that names no schedule
    (W006, its follow-up runs are recorded skipped) and a cycle (W007, the chain stops at
    SILLO_CHAIN_MAX_DEPTH). Code defaults bypass the save gate, so they are checked here."""
    declared = {d.name: d for d in defaults.declared(registry)}
    linked = [d for d in declared.values() if d.options.then or d.options.catch]
    if not linked:
        return []
    try:
        rows = list(Schedule.objects.values_list("code", "then", "catch"))
    except DatabaseError:
        rows = []  # not migrated yet: the declarations alone are checked
    known = {code for code, _, _ in rows} | set(declared)
    edges = chains.graph(rows=rows)
    for declaration in linked:  # the code's links, as the next sync writes them
        edges[declaration.name] = [(kind, code) for kind in ("then", "catch")
                                   for code in getattr(declaration.options, kind)]  # fmt: skip
    warnings = []
    for declaration in linked:
        for kind in ("then", "catch"):
            for code in getattr(declaration.options, kind):
                if code not in known:
                    warnings.append(Warning(
                        f"task '{declaration.name}': {kind}= names '{code}', which is neither "
                        "a schedule nor a task's code default",
                        hint="Create that schedule, or fix the code; until then its follow-up "
                        "runs are recorded skipped.",
                        id="schedules.W006",
                    ))  # fmt: skip
        path = chains.cycle_through(declaration.name, edges)
        if path is not None:
            warnings.append(Warning(
                f"task '{declaration.name}': its follow-ups make a cycle: {' '.join(path)}",
                hint="Break the cycle; each run of it would chain until SILLO_CHAIN_MAX_DEPTH.",
                id="schedules.W007",
            ))  # fmt: skip
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
            id="schedules.E020",
        )
    ]


HTMX_MIDDLEWARE = "django_htmx.middleware.HtmxMiddleware"
AUTH_MIDDLEWARE = "django.contrib.auth.middleware.AuthenticationMiddleware"
# What a host must install, and what fails without it (README, "Add to an existing project").
REQUIRED_APPS = {
    "django_htmx": "the pages load htmx with {% load django_htmx %}",
    "channels": "the live pages and runscheduler's wake hints use Channels",
    "django.contrib.auth": "every page needs a logged-in user with permissions",
    "django.contrib.contenttypes": "permissions need content types",
}


def _has_middleware(path: str) -> bool:
    """`path` or a subclass of it is in MIDDLEWARE."""
    wanted = import_string(path)
    for candidate in settings.MIDDLEWARE:
        try:
            found = import_string(candidate)
        except ImportError:
            continue
        if isinstance(found, type) and issubclass(found, wanted):
            return True
    return False


@register("schedules")
def check_host_setup(app_configs: object = None, **kwargs: object) -> list[CheckMessage]:
    """What a host project is missing, said by `manage.py check` before the first request."""
    found: list[CheckMessage] = []
    for app, why in REQUIRED_APPS.items():
        if not apps.is_installed(app):
            found.append(
                Error(
                    f'"{app}" is not in INSTALLED_APPS: {why}.',
                    hint=f'Add "{app}" to INSTALLED_APPS.',
                    id="schedules.E010",
                )
            )
    for path, why in (
        (HTMX_MIDDLEWARE, "the pages answer htmx requests with request.htmx"),
        (AUTH_MIDDLEWARE, "every page needs request.user"),
    ):
        if not _has_middleware(path):
            found.append(
                Error(
                    f"{path} is not in MIDDLEWARE: {why}.",
                    hint=f'Add "{path}" to MIDDLEWARE.',
                    id="schedules.E011",
                )
            )
    if not any(
        engine["BACKEND"] == "django.template.backends.django.DjangoTemplates"
        and (engine.get("APP_DIRS") or "loaders" in engine.get("OPTIONS", {}))
        for engine in settings.TEMPLATES
    ):
        found.append(
            Error(
                "no Django template engine finds the app's templates.",
                hint='Set "APP_DIRS": True on the DjangoTemplates engine in TEMPLATES.',
                id="schedules.E012",
            )
        )
    if "default" not in getattr(settings, "CHANNEL_LAYERS", {}):
        found.append(
            Warning(
                "no channel layer (CHANNEL_LAYERS): live updates are off. Schedules still "
                "run and the pages still work; they say that live updates are off.",
                hint="For live pages set CHANNEL_LAYERS (channels_redis in production, "
                "channels.layers.InMemoryChannelLayer for one process) and route the "
                "websocket in asgi.py with schedules.routing.asgi_application.",
                id="schedules.W010",
            )
        )
    database = connections[router.db_for_read(RunTally)]
    vendor = database.vendor
    if vendor == "sqlite" and (not settings.USE_TZ or database.settings_dict.get("TIME_ZONE")):
        found.append(
            Warning(
                "SQLite stores the runs' times in local time (USE_TZ is off, or the "
                "database has a TIME_ZONE): the schedule page's per-day counts read them "
                "as UTC (schedules/run_tallies.py) and put runs on the wrong day.",
                hint="Set USE_TZ = True and remove the database's TIME_ZONE.",
                id="schedules.W013",
            )
        )
    if (
        vendor == "sqlite"
        and database.settings_dict.get("OPTIONS", {}).get("transaction_mode") != "IMMEDIATE"
    ):
        found.append(
            Warning(
                "SQLite without IMMEDIATE transactions: the scheduler and the web "
                "process write at the same time, and a transaction that reads before "
                'it writes fails with "database is locked" instead of waiting (an API '
                "call answers 503, a page 500, the scheduler retries its pass).",
                hint='In DATABASES, set "OPTIONS": {"transaction_mode": "IMMEDIATE", '
                '"timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"} '
                "(the reference project's, sillo_dash/settings.py), or use PostgreSQL.",
                id="schedules.W015",
            )
        )
    if vendor not in ("sqlite", "postgresql"):
        found.append(
            Warning(
                f"the runs are kept on {vendor}: the schedule page's per-day counts are "
                "kept by SQLite or PostgreSQL triggers (schedules/run_tallies.py), and "
                "show no runs here. Schedules still run.",
                hint="Use SQLite or PostgreSQL for the app's tables.",
                id="schedules.W012",
            )
        )
    return found


@register("schedules")
def check_notify_urls(app_configs: object = None, **kwargs: object) -> list[Warning]:
    """A SILLO_NOTIFY URL that no channel kind accepts is skipped; say so at start-up."""
    return [
        Warning(
            f"SILLO_NOTIFY: {problem}",
            hint="docs/alerts.md lists the URL forms.",
            id="schedules.W011",
        )
        for problem in env_problems()
    ]


@register("schedules")
def check_metrics_label_limit(app_configs: object = None, **kwargs: object) -> list[Warning]:
    """A label limit out of range is bounded by the scrape; say so at start-up."""
    _used, problem = metrics_label_limit()
    if not problem:
        return []
    return [
        Warning(
            f"SILLO_METRICS_MAX_SCHEDULES {problem}.",
            hint='The schedules past it are summed under schedule="_other" in /metrics.',
            id="schedules.W014",
        )
    ]
