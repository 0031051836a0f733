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
    # Alerts (docs/alerts.md). The global default rules; tasks (`alert=`) and
    # schedules override them key by key.
    "SILLO_ALERTS": {},
    # Channel URLs from the environment: http(s) webhook, mailto:, apprise URLs.
    "SILLO_NOTIFY": [],
    # Absolute links in notifications.
    "SILLO_BASE_URL": "http://localhost:8000",
    # Delivery: attempts per notification, backoff, one send's timeout, polling.
    "SILLO_NOTIFY_MAX_ATTEMPTS": 5,
    "SILLO_NOTIFY_RETRY_DELAY": 30.0,
    "SILLO_NOTIFY_MAX_RETRY_DELAY": 3600.0,
    "SILLO_NOTIFY_TIMEOUT": 10.0,
    "SILLO_NOTIFY_POLL": 2.0,
    # The Django mailer (MAILERS alias) the `mailto:` channel sends with.
    "SILLO_NOTIFY_MAILER": "default",
    # A notification claimed by a deliverer that died is retried after this.
    "SILLO_NOTIFY_LEASE": 300.0,
    # How often each scheduler looks for late slots, stuck runs and due probes.
    "SILLO_ALERT_CHECK_INTERVAL": 10.0,
    # Schedules exported with their own `schedule` label in /metrics; the rest sum into "_other".
    "SILLO_METRICS_MAX_SCHEDULES": 100,
    "SILLO_MIDDLEWARE": [
        "schedules.scheduler.pipeline.log_run",
        "schedules.scheduler.pipeline.retry",
        "schedules.scheduler.pipeline.timeout",
    ],
}


def setting(name: str) -> Any:
    return getattr(settings, name, DEFAULTS[name])
