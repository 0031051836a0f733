"""Reads that span models: counts for health and metrics, the list's search, the live log.

Reads of one model live on its QuerySet (`Schedule.objects.due()`,
`SchedulerInstance.objects.alive()`, `Run.objects.for_schedule()`); this
module holds the ones that combine several. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Coalesce

from .alerts.models import IncidentEvent
from .bulk import stored_moment
from .choices import ERROR_OUTCOMES, FINISHED, RunReason, RunStatus, ScheduleStatus
from .conf import setting
from .models import AuditEvent, Run, Schedule, SchedulerInstance
from .registry import Registry, registry
from .search import schedules_matching

LIST_FLAGS = ("orphan", "duplicate", "invalid", "kwargs")


def filtered_schedules(params: Mapping[str, str], tasks: Registry = registry) -> QuerySet[Schedule]:
    """The schedules list with the search and filters of a query string (q, status,
    outcome, flag); unknown values are ignored."""
    schedules = Schedule.objects.all()
    # PostgreSQL text cannot hold NUL; a search longer than any code is pointless.
    search = (params.get("q") or "").replace("\x00", "").strip()[:200]
    if search:
        schedules = schedules_matching(schedules, search)
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
    """The newest queued or running run of each schedule (the run-now state), in one query.

    The running and the queued runs are read apart, joined by UNION ALL, each through
    its own partial index (run_running_idx, run_queued_schedule_idx), so only runs in
    flight are read. With `status IN (queued, running)` no partial index applies, and
    SQLite walked run_history_idx through every run a schedule kept: 52 ms on a
    schedule page for one with 100,000 runs, and as much on a list page per such row.
    """
    if not schedule_ids:
        return {}
    in_flight = (
        Run.objects.filter(schedule_id__in=schedule_ids)
        .only("id", "schedule_id", "status", "queued_at", "started_at", "finished_at", "error")
        .order_by()  # a compound statement's parts are not ordered; newest picked below
    )
    runs = (
        in_flight.filter(status=RunStatus.RUNNING)
        .union(in_flight.filter(status=RunStatus.QUEUED), all=True)
        .order_by()  # nor the whole: an ORDER BY made SQLite walk run_history_idx again
    )
    latest: dict[int, Run] = {}
    for run in runs:
        newest = latest.get(run.schedule_id)
        if newest is None or (run.queued_at, run.pk) > (newest.queued_at, newest.pk):
            latest[run.schedule_id] = run
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


def runs_in_flight() -> dict[str, int]:
    """Runs running and queued now, each counted from its partial status index."""
    return {"running": Run.objects.running().count(), "queued": Run.objects.queued().count()}


def schedule_totals() -> tuple[dict[str, int], dict[str, int]]:
    """(schedules in all and by status, runs executed and errors so far): one scan of
    the schedule table, however many callers need which (at 100,000 schedules on
    PostgreSQL each scan cost 20 to 30 ms of a /health/ request).

    Run totals come from the schedules' counters (runs of deleted schedules drop out).
    """
    found = Schedule.objects.aggregate(
        total=Count("pk"),
        **{status: Count("pk", filter=Q(status=status)) for status in ScheduleStatus.values},
        runs=Coalesce(Sum("run_count"), 0),
        errors=Coalesce(Sum("error_count"), 0),
    )
    runs = {"total": found.pop("runs"), "errors": found.pop("errors")}
    return found, runs


def recent_error_rate(*, now: datetime, window: float) -> tuple[int, int]:
    """(finished runs, errors) in the last `window` seconds (run_finished_idx)."""
    since = now - timedelta(seconds=window)
    recent = Run.objects.filter(finished_at__gte=since).exclude(status=RunStatus.SKIPPED)
    totals = recent.aggregate(
        total=Count("pk"), errors=Count("pk", filter=Q(status__in=ERROR_OUTCOMES))
    )
    return totals["total"], totals["errors"]


def queue_stats(*, now: datetime, tasks: Registry = registry) -> dict:
    """Work waiting to start: queued runs (how many, the oldest one's wait), the most
    overdue slot of an active schedule, and the backlog state.

    HEALTHY: nothing due waits longer than SILLO_BACKLOG_DEGRADED seconds;
    DEGRADED: something does; STALLED: something waited longer than
    SILLO_BACKLOG_STALLED, or runs or slots are due and no scheduler is alive.
    Slots count too: with every scheduler down, nothing is queued, yet nothing runs.
    """
    due = Run.objects.queued().filter(not_before__lte=now)
    oldest = due.order_by("not_before").values_list("not_before", flat=True).first()
    age = (now - oldest).total_seconds() if oldest else 0.0
    slot = Schedule.objects.next_slot_at(task_names=tasks.runnable_names())  # schedule_due_idx
    late = (now - slot).total_seconds() if slot is not None and slot <= now else 0.0
    state = "HEALTHY"
    if oldest is not None or late:
        waited = max(age, late)
        if waited > setting("SILLO_BACKLOG_STALLED") or not SchedulerInstance.objects.alive():
            state = "STALLED"
        elif waited > setting("SILLO_BACKLOG_DEGRADED"):
            state = "DEGRADED"
    return {
        "queued": Run.objects.queued().count(),
        "due": due.count(),
        "oldest_due_age_seconds": round(age, 3),
        "oldest_slot_late_seconds": round(late, 3),
        "backlog": state,
    }


def scheduler_stats(*, now: datetime) -> dict:
    """The original design's scheduler and queue stats, for `schedules stats`."""
    alive = list(SchedulerInstance.objects.alive())
    oldest = min((instance.started_at for instance in alive), default=None)
    jobs, totals = schedule_totals()
    return {
        "jobs": jobs,
        "runs": {**totals, "running": runs_in_flight()["running"]},
        "schedulers": len(alive),
        "uptime_seconds": round((now - oldest).total_seconds()) if oldest else None,
        "queue": queue_stats(now=now),
    }  # fmt: skip


def health_report(*, now: datetime) -> tuple[bool, dict]:
    """(healthy, report) for `GET /health/`. Unhealthy: no scheduler alive, or recent
    errors over SILLO_HEALTH_ERROR_RATE."""
    alive = list(SchedulerInstance.objects.alive())
    jobs, totals = schedule_totals()
    runs = {**totals, **runs_in_flight()}
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
        "jobs": jobs,
        "runs": {**runs, "recent": recent, "recent_errors": recent_errors},
    }
    return not problems, report


def filtered_runs(
    *,
    statuses: list[str] | None = None,
    task_name: str | None = None,
    schedule_code: str | None = None,
    reasons: list[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[Run]:
    """Runs newest first (by id, the primary key index), with the API's filters; the
    time range is on queued_at, `since` inclusive and `until` exclusive."""
    runs = Run.objects.all()
    if statuses:
        runs = runs.filter(status__in=statuses)
    if task_name:
        runs = runs.filter(task_name=task_name)
    if schedule_code:
        runs = runs.filter(schedule_code=schedule_code)
    if reasons:
        runs = runs.filter(reason__in=reasons)
    if since is not None:
        runs = runs.filter(queued_at__gte=since)
    if until is not None:
        runs = runs.filter(queued_at__lt=until)
    return runs.order_by("-pk")


AUDIT_ACTIONS = (
    "create", "edit", "pause", "resume", "cancel", "reactivate", "reset", "delete",
    "run_now", "rerun", "cancel_run", "drop_queued", "import",
)  # fmt: skip
AUDIT_CHANNELS = ("dashboard", "admin", "cli", "api", "code")
AUDIT_WINDOWS = {"24h": 1, "7d": 7, "30d": 30, "365d": 365}


def audit_events(params: Mapping[str, str], *, now: datetime) -> QuerySet[AuditEvent]:
    """The audit page's events, newest first: by schedule code, action, actor (part
    of the name), channel and time window; unknown values are ignored."""
    events = AuditEvent.objects.all()
    code = (params.get("schedule") or "").replace("\x00", "").strip()[:200]
    if code:
        events = events.filter(schedule_code=code)
    if params.get("action") in AUDIT_ACTIONS:
        events = events.filter(action=params["action"])
    actor = (params.get("actor") or "").replace("\x00", "").strip()[:200]
    if actor:
        events = events.filter(actor__icontains=actor)
    if params.get("via") in AUDIT_CHANNELS:
        events = events.filter(via=params["via"])
    days = AUDIT_WINDOWS.get(params.get("window") or "")
    if days:
        events = events.filter(at__gte=now - timedelta(days=days))
    return events.order_by("-at", "-pk")


STRIP_LENGTH = 20


@dataclass(frozen=True)
class Outcome:
    """A finished run as an outcome strip shows it."""

    pk: int
    schedule_id: int
    status: str
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def duration(self) -> timedelta | None:
        if self.started_at and self.finished_at:
            return self.finished_at - self.started_at
        return None


STRIP_FIELDS = ("id", "schedule_id", "status", "queued_at", "started_at", "finished_at")


def recent_outcomes(schedule_ids: list[int]) -> dict[int, list[Outcome]]:
    """Each schedule's last STRIP_LENGTH finished runs, oldest first, in one query.

    One UNION ALL of a LIMITed read per schedule, each walking run_history_idx
    for its 20 rows, whatever the schedule's history. (A window function
    numbering every run of the page's schedules read them all: 90 ms for 50
    schedules of 1,000 runs on SQLite.) On PostgreSQL, a LATERAL join over the
    ids does the same reads with one small plan: planning the 50-part UNION took
    12 of its 15 ms. Rows stay tuples: model instances cost more than the query.
    """
    if not schedule_ids:
        return {}
    if connection.vendor == "postgresql":
        rows = _recent_on_postgresql(schedule_ids)
    else:
        one = (
            Run.objects.filter(schedule_id=0)  # its parameter comes first, then the statuses
            .filter(status__in=FINISHED)
            .order_by("-queued_at")  # run_history_idx's order: no sort
            .values_list(*STRIP_FIELDS)[:STRIP_LENGTH]
        )
        sql, args = one.query.sql_with_params()  # args: the schedule id, then the statuses
        parts = [f"SELECT * FROM ({sql}) AS s{number}" for number in range(len(schedule_ids))]
        params = [value for schedule_id in schedule_ids for value in (schedule_id, *args[1:])]
        with connection.cursor() as cursor:
            cursor.execute(" UNION ALL ".join(parts), params)
            rows = cursor.fetchall()
    found: dict[int, list[Outcome]] = {}
    for pk, schedule_id, status, *times in rows:
        queued, started, finished = (stored_moment(value) for value in times)
        found.setdefault(schedule_id, []).append(
            Outcome(pk, schedule_id, status, queued, started, finished)
        )
    for outcomes in found.values():
        outcomes.sort(key=lambda outcome: (outcome.queued_at, outcome.pk))
    return found


def _recent_on_postgresql(schedule_ids: list[int]) -> list[tuple]:
    columns = ", ".join(STRIP_FIELDS)
    sql = (
        f"SELECT r.* FROM unnest(%s::bigint[]) AS s(owner) CROSS JOIN LATERAL"
        f" (SELECT {columns} FROM {connection.ops.quote_name(Run._meta.db_table)}"
        " WHERE schedule_id = s.owner AND status = ANY(%s)"
        f" ORDER BY queued_at DESC LIMIT {STRIP_LENGTH}) AS r"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [schedule_ids, sorted(FINISHED)])
        return cursor.fetchall()


def asked_by(run: Run) -> str:
    """Who asked for a run, in the run page's words: the user of the dashboard, the API
    or the admin; for a manual run without one, the actor its audit entry names (the
    CLI's "cli:<os user>") or the half-open probe that queued it; else the schedule."""
    if run.requested_by is not None:
        return run.requested_by.get_username()
    if run.reason != RunReason.MANUAL or run.schedule_id is None:
        return "the schedule"
    mark = f"run #{run.pk}"
    actor = (
        AuditEvent.objects.filter(schedule_id=run.schedule_id, action__in=("run_now", "rerun"))
        .filter(
            Q(detail=mark) | Q(detail__startswith=f"{mark} ") | Q(detail__startswith=f"{mark},")
        )
        .values_list("actor", flat=True)
        .first()
    )
    if actor:
        return actor
    if IncidentEvent.objects.filter(event="probe", run_id=run.pk).exists():
        return "a half-open probe (alerts)"
    return "someone without a dashboard account"
