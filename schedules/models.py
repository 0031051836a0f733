"""Schedule, Run and SchedulerInstance records."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from functools import lru_cache

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from .timing import Trigger, trigger_from_spec


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


FINISHED = (
    RunStatus.SUCCEEDED,
    RunStatus.FAILED,
    RunStatus.TIMED_OUT,
    RunStatus.SKIPPED,
    RunStatus.INTERRUPTED,
    RunStatus.CANCELLED,
)


class RunReason(models.TextChoices):
    SCHEDULED = "scheduled"
    MANUAL = "manual"
    RETRY = "retry"
    CATCH_UP = "catch-up"


class Schedule(models.Model):
    code = models.SlugField(max_length=200, unique=True)
    # No index of its own: with one, SQLite plans the due query by task name, which
    # reads every schedule of a task instead of the due ones (schedule_due_idx).
    task_name = models.CharField(max_length=200)
    kwargs = models.JSONField(default=dict, blank=True)
    trigger = models.JSONField(help_text="trigger spec, see docs/timing.md")
    tz = models.CharField("time zone", max_length=64, default="UTC")
    status = models.CharField(
        max_length=16, choices=ScheduleStatus.choices, default=ScheduleStatus.ACTIVE
    )
    source = models.CharField(
        max_length=16, choices=ScheduleSource.choices, default=ScheduleSource.OPERATOR
    )

    timeout = models.FloatField(null=True, blank=True, help_text="seconds; empty for none")
    max_attempts = models.PositiveIntegerField(default=1)
    retry_delay = models.FloatField(default=10.0, help_text="seconds before the first retry")
    max_instances = models.PositiveIntegerField(default=1)
    overlap = models.CharField(max_length=16, choices=Overlap.choices, default=Overlap.SKIP)
    misfire = models.CharField(max_length=16, choices=Misfire.choices, default=Misfire.SKIP)
    misfire_grace = models.FloatField(default=60.0, help_text="seconds")
    priority = models.IntegerField(default=0)
    dispatch = models.CharField(
        max_length=16,
        choices=Dispatch.choices,
        default=Dispatch.INLINE,
        help_text="where task bodies run: in the scheduler, or enqueued on Django's TASKS backend",
    )

    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_outcome = models.CharField(max_length=16, choices=RunStatus.choices, blank=True)
    last_error = models.TextField(blank=True)
    last_duration = models.FloatField(null=True, blank=True, help_text="seconds")
    run_count = models.PositiveBigIntegerField(default=0)
    error_count = models.PositiveBigIntegerField(default=0)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["code"]
        permissions = [("operate_schedule", "Can run, pause, resume and cancel schedules")]
        indexes = [
            # The scheduler's due query: active schedules by next_run_at.
            models.Index(
                fields=["next_run_at"],
                name="schedule_due_idx",
                condition=Q(status="active"),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=ScheduleStatus.values), name="schedule_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(source__in=ScheduleSource.values), name="schedule_source_valid"
            ),
            models.CheckConstraint(
                condition=Q(overlap__in=Overlap.values), name="schedule_overlap_valid"
            ),
            models.CheckConstraint(
                condition=Q(misfire__in=Misfire.values), name="schedule_misfire_valid"
            ),
            models.CheckConstraint(
                condition=Q(max_attempts__gte=1), name="schedule_max_attempts_positive"
            ),
            models.CheckConstraint(
                condition=Q(max_instances__gte=1), name="schedule_max_instances_positive"
            ),
            models.CheckConstraint(
                condition=Q(timeout__isnull=True) | Q(timeout__gt=0),
                name="schedule_timeout_positive",
            ),
            models.CheckConstraint(
                condition=Q(dispatch__in=Dispatch.values), name="schedule_dispatch_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.code

    def get_trigger(self) -> Trigger:
        """The parsed trigger; raises InvalidTrigger for a spec that no longer parses.

        Triggers are immutable, so schedules with the same spec share one parse.
        """
        return _parse_spec(json.dumps(self.trigger, sort_keys=True))


@lru_cache(maxsize=10_000)
def _parse_spec(spec_json: str) -> Trigger:
    return trigger_from_spec(spec_json)


class Run(models.Model):
    schedule = models.ForeignKey(
        Schedule, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    # Kept so the log outlives a deleted schedule.
    schedule_code = models.CharField(max_length=200)
    task_name = models.CharField(max_length=200)
    kwargs = models.JSONField(default=dict, blank=True)

    reason = models.CharField(max_length=16, choices=RunReason.choices)
    slot = models.DateTimeField(null=True, blank=True)
    attempt = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    dispatch = models.CharField(max_length=16, choices=Dispatch.choices, default=Dispatch.INLINE)

    queued_at = models.DateTimeField(default=timezone.now)
    not_before = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    error = models.TextField(blank=True)
    traceback = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True)
    scheduler = models.CharField(max_length=64, blank=True, db_index=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    class Meta:
        ordering = ["-queued_at", "-id"]
        indexes = [
            # Schedule page history and retention pruning.
            models.Index(fields=["schedule", "-queued_at"], name="run_history_idx"),
            # The scheduler's pick-up of queued runs (manual runs, retries).
            models.Index(
                fields=["not_before"], name="run_queued_idx", condition=Q(status="queued")
            ),
            # Health's error rate, the metrics window and the live log's catch-up.
            models.Index(fields=["finished_at"], name="run_finished_idx"),
            # In-flight counts (max_instances) and crash recovery.
            models.Index(
                fields=["schedule", "scheduler"],
                name="run_running_idx",
                condition=Q(status="running"),
            ),
        ]
        constraints = [
            # The safety net behind atomic claims: a slot runs once per attempt.
            models.UniqueConstraint(
                fields=["schedule", "slot", "attempt"],
                name="run_slot_attempt_unique",
                condition=~Q(reason="manual"),
            ),
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values), name="run_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(reason__in=RunReason.values), name="run_reason_valid"
            ),
            models.CheckConstraint(condition=Q(attempt__gte=1), name="run_attempt_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_code} #{self.pk} ({self.status})"

    @property
    def duration(self) -> timedelta | None:
        if self.started_at and self.finished_at:
            return self.finished_at - self.started_at
        return None

    @property
    def duration_ms(self) -> int | None:
        duration = self.duration
        return None if duration is None else round(duration.total_seconds() * 1000)


class SchedulerInstance(models.Model):
    """A runscheduler process, or a worker process executing enqueued runs."""

    id = models.CharField(max_length=64, primary_key=True)
    kind = models.CharField(max_length=16, default="scheduler")
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    heartbeat_at = models.DateTimeField(default=timezone.now, db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-heartbeat_at"]

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"

    def is_alive(self, now: datetime, stale_after: float) -> bool:
        return self.stopped_at is None and (now - self.heartbeat_at).total_seconds() <= stale_after
