"""Liveness and counts for `GET /health/` and monitoring."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Q

from .conf import setting
from .models import Schedule, ScheduleStatus
from .scheduler.store import alive_instances, recent_error_rate, run_totals


def health_report(*, now: datetime) -> tuple[bool, dict]:
    """(healthy, report). Unhealthy: no scheduler alive, or recent errors over the threshold."""
    alive = list(alive_instances(now=now, stale_after=setting("SILLO_STALE_AFTER")))
    jobs = Schedule.objects.aggregate(
        total=Count("pk"),
        active=Count("pk", filter=Q(status=ScheduleStatus.ACTIVE)),
        paused=Count("pk", filter=Q(status=ScheduleStatus.PAUSED)),
    )
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
        "jobs": jobs,
        "runs": {**runs, "recent": recent, "recent_errors": recent_errors},
    }
    return not problems, report
