"""The app's settings, all prefixed SILLO_, with their defaults in this one place.

A host overrides any of them in its Django settings; none is required.
`setting(name)` is the one way the app reads them.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

DEFAULTS: dict[str, Any] = {
    # How often code defaults are synced (and the longest sleep, if polling is longer).
    "SILLO_RESYNC_INTERVAL": 30.0,
    # Longest sleep between passes: a run queued by another process (the CLI, the
    # admin, another web process) starts within this even with no channel layer.
    "SILLO_POLL_INTERVAL": 1.0,
    "SILLO_HEARTBEAT_INTERVAL": 5.0,
    # A scheduler whose heartbeat is older than this is dead; its runs become interrupted.
    "SILLO_STALE_AFTER": 30.0,
    # Threads for the sync bodies of tasks declared isolation="inline".
    "SILLO_SYNC_WORKERS": 8,
    # Worker processes that execute runs (isolation="process", the default).
    "SILLO_MIN_WORKERS": 1,
    "SILLO_MAX_WORKERS": 8,
    "SILLO_WORKER_MAX_RUNS": 1000,  # a worker is replaced after this many runs ...
    "SILLO_WORKER_MAX_MEMORY_MB": 1024,  # ... or once its peak memory passes this (0: no limit)
    "SILLO_WORKER_IDLE_TIMEOUT": 60.0,  # idle workers beyond the minimum stop after this
    "SILLO_KILL_GRACE": 1.0,  # seconds between SIGTERM and SIGKILL when a run is stopped
    # Runs that wait in the scheduler for a worker beyond the busy ones; more wait queued.
    "SILLO_WORKER_BACKLOG": 256,
    # Timeout of tasks that declare none; a task declares timeout=0 to run without one.
    "SILLO_DEFAULT_TIMEOUT": 3600.0,
    "SILLO_CLAIM_BATCH": 500,
    # HTTP requests `runscheduler --serve` lets into Django at once; the rest wait their
    # turn (schedules.admission): the scheduler's loop shares the process.
    "SILLO_SERVE_REQUESTS": 1,
    # Slots are claimed this many seconds before they fall due and start at their
    # instant: the claim's transaction is then not part of a run's lateness.
    "SILLO_CLAIM_AHEAD": 0.05,
    "SILLO_SHUTDOWN_GRACE": 10.0,
    "SILLO_MAX_RETRY_DELAY": 3600.0,
    "SILLO_MAX_CATCH_UP": 100,
    # Follow-ups (docs/chains.md): at most this many hops from a chain's first run;
    # a longer chain is refused at save and, at run time, recorded skipped where it stops.
    "SILLO_CHAIN_MAX_DEPTH": 10,
    "SILLO_RUNS_PER_SCHEDULE": 1000,
    # Finished runs older than this many days are deleted too (None: kept by count only).
    "SILLO_RUNS_MAX_AGE_DAYS": None,
    # Seconds between two bounded rounds of pruning.
    "SILLO_PRUNE_INTERVAL": 60.0,
    "SILLO_RESULT_MAX_CHARS": 10_000,
    # A run's captured output (prints, stderr, log records): at most this many
    # characters, its head and tail kept (0: capture nothing), and the lowest
    # level of log records captured ("" or None: prints only). docs/settings.md.
    "SILLO_OUTPUT_MAX_CHARS": 1_000_000,
    "SILLO_OUTPUT_LEVEL": "INFO",
    # Audit events older than this many days are deleted (None: kept for ever).
    "SILLO_AUDIT_MAX_AGE_DAYS": 365,
    "SILLO_HEALTH_ERROR_RATE": 0.5,
    # `schedules stats`: the oldest due run waiting longer than these is DEGRADED, STALLED.
    "SILLO_BACKLOG_DEGRADED": 60.0,
    "SILLO_BACKLOG_STALLED": 300.0,
    "SILLO_HEALTH_WINDOW": 3600.0,
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
    # Prometheus /metrics: "off", "token" (Authorization: Bearer SILLO_METRICS_TOKEN) or "public".
    "SILLO_METRICS": "off",
    "SILLO_METRICS_TOKEN": "",
    # Requests per API token (or per logged-in user) and period, counted in Django's
    # default cache; None turns throttling off. See docs/api.md.
    "SILLO_API_THROTTLE": "600/min",
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
    # A channel with this many notifications of one event waiting gets one summary of
    # them (0: never); after a summary, that event waits this long for the next one.
    "SILLO_NOTIFY_GROUP_AT": 5,
    "SILLO_NOTIFY_GROUP_INTERVAL": 60.0,
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
    # Read on every run by the scheduler's hot path: Django's lazy settings answer an
    # unset name by raising AttributeError, which costs more than the run's own work.
    try:
        return _read[name]
    except KeyError:
        value = _read[name] = getattr(settings, name, DEFAULTS[name])
        return value


# Settings as read, until Django says one changed (override_settings, the test fixtures).
_read: dict[str, Any] = {}


def _forget_read(**_kwargs: Any) -> None:
    _read.clear()


setting_changed.connect(_forget_read, dispatch_uid="sillo-settings")


# The most schedules with their own label. A scrape names them in one statement (SQLite
# binds at most 32,766 values), and every label is a series per status and bucket.
MAX_METRICS_LABELS = 10_000


def metrics_label_limit() -> tuple[int, str]:
    """(how many schedules get their own label, why SILLO_METRICS_MAX_SCHEDULES was not
    taken as it is, or ""): a value out of range is bounded, never a failed scrape."""
    value, highest = setting("SILLO_METRICS_MAX_SCHEDULES"), MAX_METRICS_LABELS
    whole = isinstance(value, int) and not isinstance(value, bool)
    used = min(max(value, 0), highest) if whole else DEFAULTS["SILLO_METRICS_MAX_SCHEDULES"]
    if whole and used == value:
        return used, ""
    return used, f"must be a whole number from 0 to {highest:,}, got {value!r}; using {used:,}"


# (name, lowest allowed, highest allowed) of the numeric settings checked at start.
RANGES: tuple[tuple[str, float, float], ...] = (
    ("SILLO_RESYNC_INTERVAL", 0.01, 3600),
    ("SILLO_POLL_INTERVAL", 0.01, 3600),
    ("SILLO_HEARTBEAT_INTERVAL", 0.01, 3600),
    ("SILLO_STALE_AFTER", 0.1, 86400),
    ("SILLO_SYNC_WORKERS", 1, 1024),
    ("SILLO_MIN_WORKERS", 0, 1024),
    ("SILLO_MAX_WORKERS", 1, 1024),
    ("SILLO_WORKER_MAX_RUNS", 1, 10**9),
    ("SILLO_WORKER_MAX_MEMORY_MB", 0, 10**7),
    ("SILLO_WORKER_IDLE_TIMEOUT", 0, 10**7),
    ("SILLO_KILL_GRACE", 0, 600),
    ("SILLO_WORKER_BACKLOG", 0, 100_000),
    ("SILLO_DEFAULT_TIMEOUT", 0, 10**9),
    ("SILLO_SHUTDOWN_GRACE", 0, 86400),
    ("SILLO_CLAIM_BATCH", 1, 100_000),
    ("SILLO_SERVE_REQUESTS", 1, 1024),
    ("SILLO_CLAIM_AHEAD", 0, 1),
    ("SILLO_CHAIN_MAX_DEPTH", 1, 1000),
    ("SILLO_OUTPUT_MAX_CHARS", 0, 10**9),
)


def setting_problems() -> list[str]:
    """One line per scheduler setting out of range; the scheduler refuses to start on any."""
    problems = []
    for name, low, high in RANGES:
        value = setting(name)
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            problems.append(f"{name} must be a number from {low:g} to {high:g}, got {value!r}")
        elif not low <= value <= high:
            problems.append(f"{name} must be from {low:g} to {high:g}, got {value!r}")
    level = setting("SILLO_OUTPUT_LEVEL")
    if level not in (None, "", "OFF", "off") and not isinstance(
        level if isinstance(level, int) else logging.getLevelName(str(level).upper()), int
    ):
        problems.append(f"SILLO_OUTPUT_LEVEL must be a logging level name or '', got {level!r}")
    if not problems and setting("SILLO_HEARTBEAT_INTERVAL") > setting("SILLO_STALE_AFTER") / 3:
        problems.append(
            "SILLO_HEARTBEAT_INTERVAL must be at most a third of SILLO_STALE_AFTER "
            f"({setting('SILLO_HEARTBEAT_INTERVAL'):g} > {setting('SILLO_STALE_AFTER'):g} / 3)"
        )
    if not problems and setting("SILLO_MIN_WORKERS") > setting("SILLO_MAX_WORKERS"):
        problems.append(
            "SILLO_MIN_WORKERS must not exceed SILLO_MAX_WORKERS "
            f"({setting('SILLO_MIN_WORKERS')} > {setting('SILLO_MAX_WORKERS')})"
        )
    return problems
