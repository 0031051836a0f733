"""The choice sets of schedules and runs, declared once.

The models, the task registry, forms and the CLI all read these. This module
defines no model, so the registry can import it before Django's apps are ready.
"""

from __future__ import annotations

from django.db import models


class ScheduleStatus(models.TextChoices):
    ACTIVE = "active"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    COMPLETED = "completed"


class ScheduleSource(models.TextChoices):
    CODE = "code", "code default"
    OPERATOR = "operator"


class Overlap(models.TextChoices):
    SKIP = "skip"
    REPLACE = "replace"


class Misfire(models.TextChoices):
    SKIP = "skip"
    ONCE = "once"
    ALL = "all"


class RateMode(models.TextChoices):
    SKIP = "skip", "skip the run"
    WAIT = "wait", "wait for a token"


class Dispatch(models.TextChoices):
    INLINE = "inline", "by the scheduler"  # to its own worker processes (or inline tasks)
    ENQUEUE = "enqueue", "on the worker pool"


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out", "timed out"
    SKIPPED = "skipped"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"


class RunReason(models.TextChoices):
    SCHEDULED = "scheduled"
    MANUAL = "manual"
    RETRY = "retry"
    CATCH_UP = "catch-up"
    CHAINED = "chained"  # a follow-up (then / catch) of another run's final outcome


class FollowKind(models.TextChoices):
    THEN = "then", "on success"
    CATCH = "catch", "on final failure"


# Named priorities, accepted beside integers; higher starts first among queued runs.
PRIORITY_LEVELS = {"low": -10, "normal": 0, "high": 10, "critical": 20}


def priority_value(value: int | str) -> int:
    """An integer priority from an integer or a level name; ValueError names the levels."""
    if isinstance(value, bool):
        raise ValueError("priority must be an integer or one of " + ", ".join(PRIORITY_LEVELS))
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    if text in PRIORITY_LEVELS:
        return PRIORITY_LEVELS[text]
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            f"priority must be an integer or one of {', '.join(PRIORITY_LEVELS)}, got {value!r}"
        ) from None


FINISHED = (
    RunStatus.SUCCEEDED,
    RunStatus.FAILED,
    RunStatus.TIMED_OUT,
    RunStatus.SKIPPED,
    RunStatus.INTERRUPTED,
    RunStatus.CANCELLED,
)
# Runs that did not succeed: the runs page's partial index (run_problem_idx) holds these.
PROBLEM_STATUSES = ("failed", "timed_out", "interrupted", "cancelled", "skipped")
# Outcomes that count as errors in a schedule's counters, health and metrics.
ERROR_OUTCOMES = (RunStatus.FAILED, RunStatus.TIMED_OUT, RunStatus.INTERRUPTED)
