"""Scheduler instances: registering, heartbeats, and recovering the runs of dead ones."""

from __future__ import annotations

import logging
import os
from datetime import datetime, timedelta

from django.db import transaction

from ..alerts import record as alerts
from ..models import Run, RunStatus, SchedulerInstance
from .outcomes import record_on_schedules

logger = logging.getLogger(__name__)


def register_instance(
    *, instance_id: str, host: str, pid: int, now: datetime, kind: str = "scheduler"
) -> None:
    SchedulerInstance.objects.update_or_create(
        id=instance_id,
        defaults={"host": host, "pid": pid, "kind": kind, "heartbeat_at": now, "stopped_at": None},
        create_defaults={
            "host": host,
            "pid": pid,
            "kind": kind,
            "started_at": now,
            "heartbeat_at": now,
        },
    )


def heartbeat(*, instance_id: str, now: datetime) -> int:
    """Refresh the heartbeat; 0 if the record is gone (the caller registers again)."""
    return SchedulerInstance.objects.filter(id=instance_id, stopped_at__isnull=True).update(
        heartbeat_at=now
    )


def stop_instance(*, instance_id: str, now: datetime) -> None:
    SchedulerInstance.objects.filter(id=instance_id).update(stopped_at=now, heartbeat_at=now)


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_crashed(*, now: datetime, stale_after: float, host: str) -> list[Run]:
    """Mark dead schedulers stopped and their running runs interrupted.

    Dead: heartbeat older than `stale_after`, or (on this host) a pid that no
    longer exists, so a restart after a crash recovers at once.
    """
    stale = now - timedelta(seconds=stale_after)
    candidates = SchedulerInstance.objects.filter(stopped_at__isnull=True)
    dead = [
        inst.id
        for inst in candidates
        if inst.heartbeat_at < stale or (inst.host == host and not _pid_exists(inst.pid))
    ]
    if dead:
        SchedulerInstance.objects.filter(id__in=dead).update(stopped_at=now)
    alive = SchedulerInstance.objects.filter(stopped_at__isnull=True).values_list("id", flat=True)
    orphaned = list(Run.objects.running().exclude(scheduler__in=alive))
    interrupted = []
    for run in orphaned:
        error = f"scheduler {run.scheduler or '?'} stopped before the run finished"
        updated = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
            status=RunStatus.INTERRUPTED, finished_at=now, error=error
        )
        if updated:
            run.status, run.finished_at, run.error = RunStatus.INTERRUPTED, now, error
            interrupted.append(run)
    with transaction.atomic():
        record_on_schedules(interrupted)
        # An interrupted run is a final failure: incidents, notifications, counters.
        alerts.after_outcomes(runs=interrupted, retried=set(), now=now)
    if interrupted:
        logger.warning("marked %d run(s) of dead schedulers interrupted", len(interrupted))
    return interrupted
