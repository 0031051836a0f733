"""Reads that span models: counts for health and metrics, the list's search, the live log.

Reads of one model live on its QuerySet (`Schedule.objects.due()`,
`SchedulerInstance.objects.alive()`, `Run.objects.for_schedule()`); this
module holds the ones that combine several. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Coalesce

from . import chains
from .choices import ERROR_OUTCOMES, FollowKind, RunReason, RunStatus, ScheduleStatus
from .conf import setting
from .models import Run, Schedule, SchedulerInstance
from .registry import Registry, registry

LIST_FLAGS = ("orphan", "duplicate", "invalid", "kwargs")


def filtered_schedules(params: Mapping[str, str], tasks: Registry = registry) -> QuerySet[Schedule]:
    """The schedules list with the search and filters of a query string (q, status,
    outcome, flag); unknown values are ignored."""
    schedules = Schedule.objects.all()
    # PostgreSQL text cannot hold NUL; a search longer than any code is pointless.
    search = (params.get("q") or "").replace("\x00", "").strip()[:200]
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


# ---------------------------------------------------------------- chains (docs/chains.md)

# Runs shown in one chain, and hops of follow-ups shown from one schedule: a page
# stays small whatever a chain (or a cycle saved before the gate) holds.
CHAIN_MAX_RUNS = 200


@dataclass
class ChainNode:
    """A run in its chain: how it follows its parent (then, catch, retry) and what follows it."""

    run: Run
    relation: str = ""
    current: bool = False
    children: list[ChainNode] = field(default_factory=list)


def _relation(child: Run, parent: Run) -> str:
    if child.reason == RunReason.RETRY:
        return "retry"
    if child.reason == RunReason.CHAINED:
        return FollowKind.THEN if parent.status == RunStatus.SUCCEEDED else FollowKind.CATCH
    return ""


def run_chain(run: Run, *, limit: int = CHAIN_MAX_RUNS) -> dict:
    """The chain a run belongs to, from its first run down: parents, retries, follow-ups.

    A query per level (up, then down), each bounded; `ids` lists every run shown,
    so the page's live hook knows which run events concern it.
    """
    ancestors: list[Run] = []
    seen = {run.pk}
    node = run
    while node.parent_id is not None and len(seen) < limit:
        parent = Run.objects.filter(pk=node.parent_id).first()
        if parent is None or parent.pk in seen:
            break
        ancestors.append(parent)
        seen.add(parent.pk)
        node = parent
    root = ChainNode(ancestors[-1] if ancestors else run)
    nodes = {root.run.pk: root}
    level = [root.run.pk]
    truncated = False
    while level:
        room = limit - len(nodes)
        found = list(Run.objects.filter(parent_id__in=level).order_by("pk")[: room + 1])
        if len(found) > room:
            truncated, found = True, found[:room]
        level = []
        for child in found:
            if child.pk in nodes:
                continue
            parent = nodes[child.parent_id]
            child_node = ChainNode(child, relation=_relation(child, parent.run))
            parent.children.append(child_node)
            nodes[child.pk] = child_node
            level.append(child.pk)
    if run.pk in nodes:
        nodes[run.pk].current = True
    live = any(n.run.status in (RunStatus.QUEUED, RunStatus.RUNNING) for n in nodes.values())
    return {"root": root, "ids": sorted(nodes), "size": len(nodes), "truncated": truncated,
            "live": live}  # fmt: skip


@dataclass
class LinkNode:
    """A follow-up schedule of a schedule, with its own follow-ups."""

    kind: str
    code: str
    schedule: Schedule | None
    children: list[LinkNode] = field(default_factory=list)
    repeated: bool = False  # met before on this path (a cycle saved before the gate)


def schedule_links(schedule: Schedule) -> dict:
    """A schedule's upstream schedules and its downstream tree of follow-ups (two queries:
    the schedules that name follow-ups, and the ones named)."""
    edges = chains.graph()
    limit = setting("SILLO_CHAIN_MAX_DEPTH")
    named = {code for links in edges.values() for _, code in links} | set(edges)
    by_code = {s.code: s for s in Schedule.objects.filter(code__in=sorted(named))}
    shown = [0]  # nodes drawn: a wide graph of shared follow-ups is cut at CHAIN_MAX_RUNS

    def down(code: str, path: tuple[str, ...]) -> list[LinkNode]:
        nodes = []
        for kind, follow in edges.get(code, []):
            if shown[0] >= CHAIN_MAX_RUNS:
                break
            shown[0] += 1
            node = LinkNode(kind, follow, by_code.get(follow), repeated=follow in path)
            if not node.repeated and len(path) <= limit:
                node.children = down(follow, (*path, follow))
            nodes.append(node)
        return nodes

    upstream = [
        LinkNode(kind, code, by_code.get(code))
        for kind, code in chains.upstream_of(schedule.code, edges)
    ]
    return {"upstream": upstream, "downstream": down(schedule.code, (schedule.code,))}
