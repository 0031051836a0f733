"""The app's settings, all prefixed SILLO_, with their defaults in this one place.

A host overrides any of them in its Django settings; none is required.
`setting(name)` is the one way the app reads them.
"""

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
    # Prometheus /metrics: "off", "token" (Authorization: Bearer SILLO_METRICS_TOKEN) or "public".
    "SILLO_METRICS": "off",
    "SILLO_METRICS_TOKEN": "",
    "SILLO_MIDDLEWARE": [
        "schedules.scheduler.pipeline.log_run",
        "schedules.scheduler.pipeline.retry",
        "schedules.scheduler.pipeline.timeout",
    ],
}


def setting(name: str) -> Any:
    return getattr(settings, name, DEFAULTS[name])
