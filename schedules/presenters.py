"""Plain-data views of schedules and runs: the CLI's JSON output."""

from __future__ import annotations

from datetime import datetime

from .flags import describe
from .models import Run, Schedule
from .registry import OPTION_NAMES, Registry, registry


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def schedule_data(schedule: Schedule, tasks: Registry = registry) -> dict:
    description, flags = describe(schedule, tasks)
    return {
        "code": schedule.code,
        "task_name": schedule.task_name,
        "status": schedule.status,
        "source": schedule.source,
        "trigger": schedule.trigger,
        "description": description,
        "tz": schedule.tz,
        "kwargs": schedule.kwargs,
        "next_run_at": iso(schedule.next_run_at),
        "last_run_at": iso(schedule.last_run_at),
        "last_outcome": schedule.last_outcome or None,
        "last_error": schedule.last_error or None,
        "last_duration_ms": None
        if schedule.last_duration is None
        else round(schedule.last_duration * 1000),
        "runs": schedule.run_count,
        "errors": schedule.error_count,
        "flags": [flag.name for flag in flags],
        "options": {name: getattr(schedule, name) for name in OPTION_NAMES},
    }


def run_data(run: Run, *, with_result: bool = True) -> dict:
    data = {
        "id": run.pk,
        "code": run.schedule_code,
        "task_name": run.task_name,
        "status": run.status,
        "reason": run.reason,
        "attempt": run.attempt,
        "slot": iso(run.slot),
        "queued_at": iso(run.queued_at),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "duration_ms": run.duration_ms,
        "error": run.error or None,
        "scheduler": run.scheduler or None,
        "cancelled_by": run.cancelled_by or None,
        "parent_id": run.parent_id,
        "depth": run.depth,
    }
    if with_result:
        data["result"] = run.result
    return data
