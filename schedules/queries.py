"""Query shaping for the dashboard: a constant number of queries per page."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from . import flags
from .models import Run, RunStatus, Schedule, ScheduleStatus


def filtered_schedules(params: dict) -> QuerySet[Schedule]:
    """The schedules list with the search and filters of the query string."""
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
    if flag in ("orphan", "duplicate"):
        schedules = flags.with_flag(schedules, flag)
    return schedules.order_by("code")


def running_counts(schedule_ids: list[int]) -> dict[int, int]:
    """Runs in flight per schedule, in one query."""
    if not schedule_ids:
        return {}
    return dict(
        Run.objects.filter(schedule_id__in=schedule_ids, status=RunStatus.RUNNING)
        .values_list("schedule_id")
        .annotate(n=Count("pk"))
        .values_list("schedule_id", "n")
    )


def latest_runs(schedule_ids: list[int]) -> dict[int, Run]:
    """The newest run of each schedule (for the run-now state), in one query."""
    if not schedule_ids:
        return {}
    latest = {}
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
