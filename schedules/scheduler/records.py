"""A new run, as claims, queued runs and outcomes make them."""

from __future__ import annotations

from datetime import datetime

from ..bulk import unsaved
from ..models import Run, Schedule


def new_run(schedule: Schedule, *, reason: str, slot: datetime | None, now: datetime) -> Run:
    return unsaved(
        Run,
        schedule=schedule,
        schedule_code=schedule.code,
        task_name=schedule.task_name,
        kwargs=schedule.kwargs,
        reason=reason,
        slot=slot,
        queued_at=now,
        not_before=now,
        dispatch=schedule.dispatch,
    )
