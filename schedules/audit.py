"""Who did what to which schedule: one row per operator action, written by the services."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from .models import AuditEvent, Schedule


def actor(by: AbstractBaseUser | str | None) -> str:
    """Who did something, as records keep it: a user name, "cli:<os user>", or ""."""
    if by is None:
        return ""
    if isinstance(by, str):
        return by
    return by.get_username() if by.is_authenticated else ""


def channel(by: AbstractBaseUser | str | None, via: str) -> str:
    """Where it came from: as given, else the CLI for "cli:..." actors, the dashboard for
    users, the code (syncs, the scheduler) for nobody."""
    if via:
        return via
    if isinstance(by, str):
        return "cli" if by.startswith("cli") else "code"
    return "dashboard" if by is not None else "code"


def record(
    action: str,
    *,
    schedule: Schedule | None,
    by: AbstractBaseUser | str | None,
    via: str = "",
    code: str = "",
    changes: dict[str, Any] | None = None,
    detail: str = "",
) -> AuditEvent:
    return AuditEvent.objects.create(
        schedule=schedule if schedule is not None and schedule.pk else None,
        schedule_code=code or (schedule.code if schedule is not None else ""),
        action=action,
        actor=actor(by),
        via=channel(by, via),
        changes=changes or {},
        detail=detail[:500],
    )
