"""System checks: task declarations, and what a host project is missing.

`manage.py check` reports these; the host-setup ones name the exact setting.
"""

from __future__ import annotations

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register
from django.utils.module_loading import import_string

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
    return found
