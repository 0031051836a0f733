"""Reads that span models: counts for health and metrics, the list's search, the live log.

Reads of one model live on its QuerySet (`Schedule.objects.due()`,
`SchedulerInstance.objects.alive()`, `Run.objects.for_schedule()`); this
module holds the ones that combine several. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Coalesce

from .choices import ERROR_OUTCOMES, RunStatus, ScheduleStatus
from .conf import setting
from .models import Run, Schedule, SchedulerInstance
from .registry import Registry, registry

LIST_FLAGS = ("orphan", "duplicate")


def filtered_schedules(params: Mapping[str, str], tasks: Registry = registry) -> QuerySet[Schedule]:
    """The schedules list with the search and filters of a query string (q, status,
    outcome, flag); unknown values are ignored."""
    schedules = Schedule.objects.all()
    search = (params.get("q") or "").strip()
    if search:
        schedules = schedules.filter(Q(code__icontains=search) | Q(task_name__icontains=search))
    status = params.get("status")
    if status in ScheduleStatus.values:
        schedules = schedules.filter(status=status)
    outcome = params.get("outcome")
    if outcome == "never":
        schedules = schedules.filter(last_outcome="")
    elif outcome in RunStatus.values:
        schedules = schedules.filter(last_outcome=outcome)
    flag = params.get("flag")
    if flag in LIST_FLAGS:
        schedules = schedules.with_flag(flag, tasks)
    return schedules.order_by("code")


def active_runs(schedule_ids: list[int]) -> dict[int, Run]:
    """The newest queued or running run of each schedule (the run-now state), in one query."""
    if not schedule_ids:
        return {}
    latest: dict[int, Run] = {}
    runs = (
        Run.objects.filter(
            schedule_id__in=schedule_ids, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]
        )
        .order_by("schedule_id", "-queued_at")
        .only("id", "schedule_id", "status", "queued_at", "started_at", "finished_at", "error")
    )
    for run in runs:
        latest.setdefault(run.schedule_id, run)
    return latest


def recent_runs(
    *, limit: int, schedule_id: int | None = None, after_id: int | None = None,
    finished_since: datetime | None = None,
) -> list[Run]:  # fmt: skip
    """The live log's runs, newest event first.

    The newest `limit` runs by id (the primary key index); with `after_id` and
    `finished_since`, only runs created after that run or finished since then
    (what a socket missed between the page's render and its connect).
    """
    runs = Run.objects.all()
    if after_id is not None or finished_since is not None:
        changed = Q()
        if after_id is not None:
            changed |= Q(pk__gt=after_id)
        if finished_since is not None:
            changed |= Q(finished_at__gt=finished_since)
        runs = runs.filter(changed)
    if schedule_id is not None:
        runs = runs.filter(schedule_id=schedule_id)
    recent = list(runs.order_by("-pk")[:limit])
    recent.sort(key=lambda run: run.latest_at, reverse=True)
    return recent


def newest_run_id() -> int:
    return Run.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


def runs_waiting_for_a_worker(*, now: datetime, patience: float = 2.0) -> int:
    """Queued runs whose time passed more than `patience` seconds ago: every worker is busy
    (or no scheduler is alive, which the dashboard says separately)."""
    overdue = now - timedelta(seconds=patience)
    return Run.objects.queued().filter(not_before__lte=overdue, dispatch="inline").count()


def run_totals() -> dict[str, int]:
    """Runs executed and errors so far, and runs in flight: cheap at any log size.

    Totals come from the schedules' counters (runs of deleted schedules drop
    out); running and queued counts read the partial status indexes.
    """
    counters = Schedule.objects.aggregate(
        total=Coalesce(Sum("run_count"), 0), errors=Coalesce(Sum("error_count"), 0)
    )
    return {
        **counters,
        "running": Run.objects.running().count(),
        "queued": Run.objects.queued().count(),
    }


def recent_error_rate(*, now: datetime, window: float) -> tuple[int, int]:
    """(finished runs, errors) in the last `window` seconds (run_finished_idx)."""
    since = now - timedelta(seconds=window)
    recent = Run.objects.filter(finished_at__gte=since).exclude(status=RunStatus.SKIPPED)
    totals = recent.aggregate(
        total=Count("pk"), errors=Count("pk", filter=Q(status__in=ERROR_OUTCOMES))
    )
    return totals["total"], totals["errors"]


def schedule_counts() -> dict[str, int]:
    """Schedules in all, and by status."""
    return Schedule.objects.aggregate(
        total=Count("pk"),
        **{status: Count("pk", filter=Q(status=status)) for status in ScheduleStatus.values},
    )


def queue_stats(*, now: datetime) -> dict:
    """Runs waiting to start: how many, the oldest one's wait, and the backlog state.

    HEALTHY: nothing due waits longer than SILLO_BACKLOG_DEGRADED seconds;
    DEGRADED: something does; STALLED: something waited longer than
    SILLO_BACKLOG_STALLED, or runs are due and no scheduler is alive.
    """
    due = Run.objects.queued().filter(not_before__lte=now)
    oldest = due.order_by("not_before").values_list("not_before", flat=True).first()
    age = (now - oldest).total_seconds() if oldest else 0.0
    state = "HEALTHY"
    if oldest is not None:
        if age > setting("SILLO_BACKLOG_STALLED") or not SchedulerInstance.objects.alive():
            state = "STALLED"
        elif age > setting("SILLO_BACKLOG_DEGRADED"):
            state = "DEGRADED"
    return {
        "queued": Run.objects.queued().count(),
        "due": due.count(),
        "oldest_due_age_seconds": round(age, 3),
        "backlog": state,
    }


def scheduler_stats(*, now: datetime) -> dict:
    """The original design's scheduler and queue stats, for `schedules stats`."""
    alive = list(SchedulerInstance.objects.alive())
    oldest = min((instance.started_at for instance in alive), default=None)
    totals = run_totals()
    return {
        "jobs": schedule_counts(),
        "runs": {"total": totals["total"], "errors": totals["errors"],
                 "running": totals["running"]},
        "schedulers": len(alive),
        "uptime_seconds": round((now - oldest).total_seconds()) if oldest else None,
        "queue": queue_stats(now=now),
    }  # fmt: skip


def health_report(*, now: datetime) -> tuple[bool, dict]:
    """(healthy, report) for `GET /health/`. Unhealthy: no scheduler alive, or recent
    errors over SILLO_HEALTH_ERROR_RATE."""
    alive = list(SchedulerInstance.objects.alive())
    runs = run_totals()
    window = setting("SILLO_HEALTH_WINDOW")
    recent, recent_errors = recent_error_rate(now=now, window=window)
    rate = recent_errors / recent if recent else 0.0
    threshold = setting("SILLO_HEALTH_ERROR_RATE")
    problems = []
    if not alive:
        problems.append("no scheduler is alive")
    if recent >= 10 and rate > threshold:
        problems.append(f"error rate {rate:.0%} over the last {window:g}s exceeds {threshold:.0%}")
    oldest = min((inst.started_at for inst in alive), default=None)
    report = {
        "status": "ok" if not problems else "unhealthy",
        "problems": problems,
        "scheduler": {
            "alive": bool(alive),
            "instances": [
                {
                    "id": i.id,
                    "host": i.host,
                    "pid": i.pid,
                    "heartbeat_at": i.heartbeat_at.isoformat(),
                }
                for i in alive
            ],
            "uptime_seconds": round((now - oldest).total_seconds()) if oldest else None,
        },
        "jobs": schedule_counts(),
        "runs": {**runs, "recent": recent, "recent_errors": recent_errors},
    }
    return not problems, report
