"""A new run, as claims, queued runs and outcomes make them."""

from __future__ import annotations

import copy
from datetime import datetime
from functools import cache

from ..models import Run, Schedule


def new_run(schedule: Schedule, *, reason: str, slot: datetime | None, now: datetime) -> Run:
    # A copy of a blank run, not Run(**values): Django's keyword __init__ walks every
    # field for each keyword, a seventh of a burst's claim; a copy costs a fifth of it.
    # (Every mutable default a copy would share is set again here; as for any copy,
    # Django sends no post_init signal for it.)
    run = copy.copy(_blank_run())
    run.schedule = schedule
    run.schedule_code = schedule.code
    run.task_name = schedule.task_name
    run.kwargs = schedule.kwargs
    run.reason = reason
    run.slot = slot
    run.queued_at = run.not_before = now
    run.dispatch = schedule.dispatch
    return run


@cache
def _blank_run() -> Run:
    return Run()
