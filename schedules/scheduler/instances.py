"""Scheduler instances: registering, heartbeats, and recovering the runs of dead ones.

Heartbeats are written, and compared, with the database's clock (`Now()`), so
a host whose clock jumps or runs minutes ahead never makes a live peer look
dead, and never looks dead itself.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime

from django.db import transaction
from django.db.models.functions import Now

from ..alerts import record as alerts
from ..models import Run, RunOutput, RunStatus, SchedulerInstance, stale_before
from . import chains
from .outcomes import lock_schedules_of, record_on_schedules, tally_order

logger = logging.getLogger(__name__)


def this_node() -> str:
    """Which kernel and pid namespace this process lives in: a pid means the same
    process only to peers with the same node (containers may share a host name)."""
    try:
        boot = open("/proc/sys/kernel/random/boot_id").read().strip()  # noqa: SIM115
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return f"{boot}:{namespace}"[:100]


NODE = this_node()


def register_instance(
    *, instance_id: str, host: str, pid: int, now: datetime, kind: str = "scheduler"
) -> None:
    SchedulerInstance.objects.update_or_create(
        id=instance_id,
        defaults={"host": host, "pid": pid, "kind": kind, "node": NODE, "heartbeat_at": Now(),
                  "stopped_at": None},
        create_defaults={"host": host, "pid": pid, "kind": kind, "node": NODE,
                         "started_at": Now(), "heartbeat_at": Now()},
    )  # fmt: skip


def heartbeat(*, instance_id: str, now: datetime | None = None) -> int:
    """Refresh the heartbeat (database clock); 0 if the record is gone (register again)."""
    return SchedulerInstance.objects.filter(id=instance_id, stopped_at__isnull=True).update(
        heartbeat_at=Now()
    )


def stop_instance(*, instance_id: str, now: datetime | None = None) -> None:
    SchedulerInstance.objects.filter(id=instance_id).update(stopped_at=Now(), heartbeat_at=Now())


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not _exited(pid)


def _exited(pid: int) -> bool:
    """Whether the process has ended and waits to be reaped (a zombie). A supervisor
    may be slow to reap, and a container's first process may never do it; a killed
    scheduler stays a zombie meanwhile, but its runs are already dead."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):  # no /proc (not Linux): the signal check is all there is
        return False


def _last_seen(runs: list[Run], now: datetime) -> dict[int, datetime]:
    """When each run of a dead scheduler was last known to be executing: its
    scheduler's last heartbeat or its output's last save, whichever is later, not
    before it started. Its body ended with its scheduler, at most a heartbeat later;
    `now` (a restart after a day down) would count the downtime as its duration."""
    if not runs:
        return {}
    beats = dict(
        SchedulerInstance.objects.filter(id__in={run.scheduler for run in runs}).values_list(
            "id", "heartbeat_at"
        )
    )
    saved = dict(
        RunOutput.objects.filter(run_id__in=[run.pk for run in runs]).values_list(
            "run_id", "updated_at"
        )
    )
    seen = {}
    for run in runs:
        known = [t for t in (run.started_at, beats.get(run.scheduler), saved.get(run.pk)) if t]
        seen[run.pk] = min(now, max(known)) if known else now
    return seen


def recover_crashed(*, now: datetime, stale_after: float, host: str) -> list[Run]:
    """Mark dead schedulers stopped and their running runs interrupted.

    Dead: a heartbeat older than `stale_after` by the database's clock, or, on
    this node (same kernel and pid namespace), a pid that no longer exists, so
    a restart after a crash recovers at once.
    """
    candidates = SchedulerInstance.objects.filter(stopped_at__isnull=True)
    stale = set(candidates.filter(stale_before(stale_after)).values_list("id", flat=True))
    dead = [
        inst.id
        for inst in candidates
        if inst.id in stale
        or (NODE and inst.node == NODE and inst.host == host and not _pid_exists(inst.pid))
    ]
    if dead:
        SchedulerInstance.objects.filter(id__in=dead).update(stopped_at=now)
    alive = SchedulerInstance.objects.filter(stopped_at__isnull=True).values_list("id", flat=True)
    # Unordered: the model's newest-first order made SQLite walk run_recent_idx through
    # every kept run (seconds beside 10 million, each heartbeat on the database thread)
    # rather than the running runs' partial index.
    orphaned = list(Run.objects.running().exclude(scheduler__in=alive).order_by())
    last_seen = _last_seen(orphaned, now)
    interrupted = []
    # One transaction with the outcomes' side effects: a catch follow-up is written
    # with the interrupted status or not at all (another recovering scheduler's
    # conditional update then matches nothing).
    with transaction.atomic():
        # As the outcome writer does: schedules first, then the runs by tally (outcomes.py).
        lock_schedules_of(orphaned)
        for run in sorted(orphaned, key=tally_order):
            error = f"scheduler {run.scheduler or '?'} stopped before the run finished"
            ended = last_seen[run.pk]
            updated = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
                status=RunStatus.INTERRUPTED, finished_at=ended, error=error
            )
            if updated:
                run.status, run.finished_at, run.error = RunStatus.INTERRUPTED, ended, error
                interrupted.append(run)
        record_on_schedules(interrupted)
        # An interrupted run is a final failure: incidents, notifications, counters.
        alerts.after_outcomes(runs=interrupted, retried=set(), now=now)
        chains.queue_follow_ups(interrupted, now=now)
    if interrupted:
        logger.warning("marked %d run(s) of dead schedulers interrupted", len(interrupted))
    return interrupted
