"""Scheduler settings, with defaults; override any of them in Django settings."""

from __future__ import annotations

from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    # Longest sleep between passes: a lost wake message delays a run at most this long.
    "SILLO_RESYNC_INTERVAL": 30.0,
    "SILLO_HEARTBEAT_INTERVAL": 5.0,
    # A scheduler whose heartbeat is older than this is dead; its runs become interrupted.
    "SILLO_STALE_AFTER": 30.0,
    "SILLO_SYNC_WORKERS": 8,
    "SILLO_CLAIM_BATCH": 500,
    "SILLO_SHUTDOWN_GRACE": 10.0,
    "SILLO_MAX_RETRY_DELAY": 3600.0,
    "SILLO_MAX_CATCH_UP": 100,
    "SILLO_RUNS_PER_SCHEDULE": 1000,
    "SILLO_RESULT_MAX_CHARS": 10_000,
    "SILLO_HEALTH_ERROR_RATE": 0.5,
    "SILLO_HEALTH_WINDOW": 3600.0,
    "SILLO_METRICS_WINDOW": 300.0,
    # Requests per API token (or per logged-in user) and period, counted in Django's
    # default cache; None turns throttling off. See docs/api.md.
    "SILLO_API_THROTTLE": "600/min",
    "SILLO_MIDDLEWARE": [
        "schedules.scheduler.pipeline.log_run",
        "schedules.scheduler.pipeline.retry",
        "schedules.scheduler.pipeline.timeout",
    ],
}


def setting(name: str) -> Any:
    return getattr(settings, name, DEFAULTS[name])
