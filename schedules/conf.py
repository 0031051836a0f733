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
    # The validation gate (schedules/validation.py, docs/security.md): overrides of
    # timing.Limits fields (max_depth, max_children, max_nodes, max_text,
    # max_seconds, max_spec_bytes, search_budget), and the kwargs rules.
    "SILLO_TRIGGER_LIMITS": {},
    "SILLO_KWARGS_MAX_DEPTH": 32,
    "SILLO_KWARGS_MAX_BYTES": 64 * 1024,
    "SILLO_KWARGS_INT_BITS": 64,
    # Caps on a run's error and traceback (head and tail kept) before they are
    # stored, rendered or broadcast.
    "SILLO_ERROR_MAX_CHARS": 4_000,
    "SILLO_TRACEBACK_MAX_CHARS": 32_000,
    # The trigger builder refuses requests with more fields than this.
    "SILLO_BUILDER_MAX_FIELDS": 400,
    # Open websockets re-check their user's session and view permission this often.
    "SILLO_WS_RECHECK_INTERVAL": 30.0,
    "SILLO_MIDDLEWARE": [
        "schedules.scheduler.pipeline.log_run",
        "schedules.scheduler.pipeline.retry",
        "schedules.scheduler.pipeline.timeout",
    ],
}


def setting(name: str) -> Any:
    return getattr(settings, name, DEFAULTS[name])
