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


class Dispatch(models.TextChoices):
    INLINE = "inline", "in the scheduler"
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


FINISHED = (
    RunStatus.SUCCEEDED,
    RunStatus.FAILED,
    RunStatus.TIMED_OUT,
    RunStatus.SKIPPED,
    RunStatus.INTERRUPTED,
    RunStatus.CANCELLED,
)
# Outcomes that count as errors in a schedule's counters, health and metrics.
ERROR_OUTCOMES = (RunStatus.FAILED, RunStatus.TIMED_OUT, RunStatus.INTERRUPTED)
