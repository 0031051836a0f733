"""Who did what to which schedule: one row per operator action, written by the services.

Every action recorded here that changes a schedule is also announced to live
pages once its transaction commits (events.ScheduleEvent): the audit trail and
the live pages then never disagree about what happened.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from .events import ScheduleEvent, announce_change
from .models import AuditEvent, Schedule

# Actions that change what a schedule's row and page show (runs announce themselves).
CHANGES = frozenset(
    {"create", "edit", "pause", "resume", "cancel", "reactivate", "reset", "delete", "import"}
)


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
    gone_id: int | None = None,
) -> AuditEvent:
    """One event; `gone_id` names a deleted schedule's id for the live pages showing it."""
    event = AuditEvent.objects.create(
        schedule=schedule if schedule is not None and schedule.pk else None,
        schedule_code=code or (schedule.code if schedule is not None else ""),
        action=action,
        actor=actor(by),
        via=channel(by, via),
        changes=changes or {},
        detail=detail[:500],
    )
    schedule_id = schedule.pk if schedule is not None else gone_id
    if action in CHANGES and schedule_id:
        change = ScheduleEvent(
            schedule_id=schedule_id, code=event.schedule_code, action=action,
            actor=event.actor, at=event.at.isoformat(),
        )  # fmt: skip
        transaction.on_commit(lambda: announce_change(change))
    return event
