"""Schedule, Run and SchedulerInstance records."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta, tzinfo
from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.validators import MinValueValidator, RegexValidator
from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.models import Case, Count, ExpressionWrapper, F, Q, When
from django.db.models.functions import Now
from django.utils import timezone

from .caps import cap_error, cap_traceback
from .choices import (
    FINISHED,
    PROBLEM_STATUSES,
    Dispatch,
    Misfire,
    Overlap,
    RateMode,
    RunReason,
    RunStatus,
    ScheduleSource,
    ScheduleStatus,
)
from .conf import setting
from .timing import InvalidTrigger, Limits, Trigger, get_zone, preview_times
from .validation import StoredJSONDecoder, kwargs_fit, parse_trigger, trigger_limits

if TYPE_CHECKING:
    from .registry import Registry

__all__ = [
    "FINISHED",
    "Channel",
    "Incident",
    "IncidentEvent",
    "Notification",
    "RunCounter",
    "CounterTotal",
    "Dispatch",
    "Misfire",
    "Overlap",
    "Run",
    "RunOutput",
    "RunTally",
    "RunReason",
    "RunStatus",
    "Schedule",
    "ScheduleSource",
    "ScheduleStatus",
    "SchedulerInstance",
    "ApiToken",
]


# schedule_task_idx is partial on a condition every task name meets. SQLite uses a
# partial index only for a query that states its condition, so the scheduler's due
# query (task_name IN the runnable names) keeps schedule_due_idx: with a plain index
# it read and sorted every schedule of the task (1.6 s late at a million schedules).
# Reads meant for the index state the condition (by_task_names, task_names_in_use).
EVERY_TASK_NAME = Q(task_name__gte="")
# Schedules that name follow-ups; its partial index (schedule_follow_ups_idx) is read
# by the queries that state the same condition (with_follow_ups).
FOLLOW_UPS = ~Q(then=[], catch=[])


def by_task_names(names: Iterable[str]) -> Q:
    """The schedules of these tasks, read through schedule_task_idx."""
    return Q(task_name__in=list(names)) & EVERY_TASK_NAME


class ScheduleQuerySet(models.QuerySet["Schedule"]):
    def due(self, *, now: datetime, task_names: Iterable[str]) -> ScheduleQuerySet:
        """Active schedules of these tasks whose slot has come (reads schedule_due_idx)."""
        return self.filter(
            status=ScheduleStatus.ACTIVE, next_run_at__lte=now, task_name__in=sorted(task_names)
        ).order_by("next_run_at", "-priority")

    def next_slot_at(self, *, task_names: Iterable[str]) -> datetime | None:
        """The earliest slot of any active schedule of these tasks (schedule_due_idx)."""
        return (
            self.filter(
                status=ScheduleStatus.ACTIVE,
                next_run_at__isnull=False,
                task_name__in=sorted(task_names),
            )
            .order_by("next_run_at")
            .values_list("next_run_at", flat=True)
            .first()
        )

    def with_follow_ups(self) -> ScheduleQuerySet:
        """Schedules that name follow-ups (then or catch): the chain graph's rows."""
        return self.filter(FOLLOW_UPS)

    def with_flag(self, flag: str, tasks: Registry) -> ScheduleQuerySet:
        """Schedules flagged `orphan`, `duplicate`, `invalid` or `kwargs`.

        `invalid`: parked by a scheduler (stored reason) or a trigger that does not
        parse now; `kwargs`: kwargs that break the rules or no longer fit the
        task's signature in the code this process runs. Those two are checked in
        Python, row by row (parses are cached): only when someone filters by them.
        """
        if flag == "orphan":
            names = task_names_in_use(using=self.db)
            if names is None:  # too many to name: read every schedule
                return self.exclude(task_name__in=sorted(tasks.declarations))
            return self.filter(by_task_names(n for n in names if n not in tasks.declarations))
        if flag == "duplicate":
            return self.filter(task_name__in=sorted(tasks.duplicate_names()))
        if flag == "invalid":
            rows = self.values_list("pk", "trigger", "invalid_reason")
            bad = [pk for pk, spec, reason in rows if reason or trigger_problem(spec)]
            return self.filter(pk__in=bad)
        if flag == "kwargs":
            rows = self.filter(task_name__in=sorted(tasks.runnable_names())).values_list(
                "pk", "task_name", "kwargs"
            )
            return self.filter(pk__in=[pk for pk, name, kw in rows if kwargs_fit(name, kw, tasks)])
        raise ValueError(f"unknown flag {flag!r} (orphan, duplicate, invalid or kwargs)")


# The most task names a page walks and names in one IN: within SQLite's oldest limit
# of 999 parameters, and a few milliseconds of seeks.
TASK_NAMES_WALKED = 500


def task_names_in_use(*, using: str = DEFAULT_DB_ALIAS) -> list[str] | None:
    """Every task name some schedule names, in the database's order: one seek of
    schedule_task_idx a name (a loose index scan), however many schedules; None when
    there are more than TASK_NAMES_WALKED (callers then read every schedule instead).

    Orphans are found as the names no code declares, then read by name. A NOT IN
    of the declared names read every schedule: 205 ms of each page at a million
    schedules, for the banner's count. Django cannot express the recursive walk.
    The walk stops at the cap: a million names would be a million seeks a page.
    """
    quote = connections[using].ops.quote_name
    table, column = quote(Schedule._meta.db_table), quote("task_name")
    every = f"{column} >= ''"  # the index's condition, as its DDL spells it (EVERY_TASK_NAME)
    sql = (
        f"WITH RECURSIVE names(name) AS (SELECT MIN({column}) FROM {table} WHERE {every} "
        f"UNION ALL SELECT (SELECT {column} FROM {table} WHERE {column} > names.name "
        f"AND {every} ORDER BY {column} LIMIT 1) FROM names WHERE names.name IS NOT NULL) "
        "SELECT name FROM names WHERE name IS NOT NULL LIMIT %s"
    )
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [TASK_NAMES_WALKED + 1])
        names = [name for (name,) in cursor.fetchall()]
    return names if len(names) <= TASK_NAMES_WALKED else None


# How much later than its time a queued catch-up starts, at most, for the runs of now.
CATCH_UP_DEFER = timedelta(seconds=60)


class RunQuerySet(models.QuerySet["Run"]):
    def running(self) -> RunQuerySet:
        return self.filter(status=RunStatus.RUNNING)

    def queued(self) -> RunQuerySet:
        return self.filter(status=RunStatus.QUEUED)

    def startable(self) -> RunQuerySet:
        """Leaves out the retries and catch-ups of paused schedules: they wait (a
        manual run is an operator's explicit ask, and runs whatever the status)."""
        paused = Q(schedule__status=ScheduleStatus.PAUSED) & ~Q(reason=RunReason.MANUAL)
        return self.exclude(paused)

    def in_start_order(self) -> RunQuerySet:
        """The order queued runs start in as workers free up: the schedule's priority,
        then time, a catch-up counting as queued CATCH_UP_DEFER later. A catch-up is
        already late, and a restart's backlog must not hold back the slots falling due
        meanwhile; deferred by a bounded time, not put last, it still starts under a
        load that never lets up. held.py keeps the same order."""
        start_at = Case(
            When(reason=RunReason.CATCH_UP, then=F("not_before") + CATCH_UP_DEFER),
            default=F("not_before"),
            output_field=models.DateTimeField(),
        )
        return self.order_by("-schedule__priority", start_at.asc(), "pk")

    def for_schedule(self, schedule: Schedule | int) -> RunQuerySet:
        """A schedule's runs, newest first (run_history_idx)."""
        return self.filter(schedule=schedule).order_by("-queued_at", "-pk")

    def for_page(self) -> RunQuerySet:
        """With what a run's page shows beside it: its schedule, requester and parent."""
        return self.select_related("schedule", "requested_by", "parent")

    def attempts_of(self, run: Run, *, limit: int = 100) -> list[Run]:
        """Every attempt of the run's slot, first to last, this one included.

        A retry points at the attempt it repeats (`parent`, reason `retry`):
        walk up to the first attempt, then down its retries, one query a step
        (a slot has at most `max_attempts`, `limit` bounds a corrupt chain).
        """
        first = run
        seen = {run.pk}
        while first.reason == RunReason.RETRY and first.parent_id and len(seen) < limit:
            parent = self.filter(pk=first.parent_id).first()
            if parent is None or parent.pk in seen:
                break
            seen.add(parent.pk)
            first = parent
        attempts = [first]
        while len(attempts) < limit:
            retry = (
                self.filter(parent_id=attempts[-1].pk, reason=RunReason.RETRY)
                .order_by("pk")
                .first()
            )
            if retry is None or retry.pk in {a.pk for a in attempts}:
                break
            attempts.append(retry)
        return attempts

    def running_counts(self, schedule_ids: Iterable[int]) -> dict[int, int]:
        """Runs in flight per schedule, in one query (run_running_idx)."""
        return self.running()._counts(schedule_ids)

    def queued_counts(self, schedule_ids: Iterable[int]) -> dict[int, int]:
        """Runs waiting to start per schedule, in one query (run_queued_schedule_idx)."""
        return self.queued()._counts(schedule_ids)

    def _counts(self, schedule_ids: Iterable[int]) -> dict[int, int]:
        return dict(
            self.filter(schedule_id__in=list(schedule_ids))
            .values_list("schedule_id")
            .annotate(n=Count("pk"))
            .values_list("schedule_id", "n")
        )


def stale_before(seconds: float) -> Q:
    """Heartbeats older than `seconds` by the database's clock (every host agrees on it)."""
    limit = ExpressionWrapper(
        Now() - timedelta(seconds=seconds), output_field=models.DateTimeField()
    )
    return Q(heartbeat_at__lt=limit)


class SchedulerInstanceQuerySet(models.QuerySet["SchedulerInstance"]):
    def alive(self, *, kind: str = "scheduler"):
        """Instances of `kind` not stopped, whose heartbeat is fresher than SILLO_STALE_AFTER
        by the database's clock."""
        fresh = self.filter(kind=kind, stopped_at__isnull=True)
        return fresh.exclude(stale_before(setting("SILLO_STALE_AFTER")))


# A schedule's code: the characters of task names (a code default's record is named
# after its task, e.g. "reports.daily").
CODE_VALIDATOR = RegexValidator(
    r"^[A-Za-z0-9_.:-]+$", "Use letters, digits and . _ : - only (like a task name)."
)


class Schedule(models.Model):
    code = models.CharField(max_length=200, unique=True, validators=[CODE_VALIDATOR])
    # Its index is partial (EVERY_TASK_NAME): with a plain one, SQLite plans the due
    # query by task name, reading every schedule of a task, not the due ones.
    task_name = models.CharField(max_length=200)
    kwargs = models.JSONField(default=dict, blank=True, decoder=StoredJSONDecoder)
    trigger = models.JSONField(
        help_text="trigger spec, see docs/timing.md", decoder=StoredJSONDecoder
    )
    tz = models.CharField("time zone", max_length=64, default="UTC")
    status = models.CharField(
        max_length=16, choices=ScheduleStatus.choices, default=ScheduleStatus.ACTIVE
    )
    source = models.CharField(
        max_length=16, choices=ScheduleSource.choices, default=ScheduleSource.OPERATOR
    )

    # The validators say what the check constraints below say, as field errors: the
    # services validate in Python, not with a query per constraint (services.py).
    timeout = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text="seconds; empty: the default (SILLO_DEFAULT_TIMEOUT, 1 hour); 0: no timeout",
    )
    max_attempts = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    retry_delay = models.FloatField(default=10.0, help_text="seconds before the first retry")
    max_instances = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    overlap = models.CharField(max_length=16, choices=Overlap.choices, default=Overlap.SKIP)
    misfire = models.CharField(max_length=16, choices=Misfire.choices, default=Misfire.SKIP)
    misfire_grace = models.FloatField(default=60.0, help_text="seconds")
    priority = models.IntegerField(default=0)
    rate_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="at most this many runs per rate period (all processes)",
    )
    # Positive: a bucket refills by rate / period (pipeline.py refuses the rest at run time).
    rate_period = models.FloatField(
        default=60.0, validators=[MinValueValidator(0.001)], help_text="seconds"
    )
    rate_mode = models.CharField(
        max_length=8, choices=RateMode.choices, default=RateMode.SKIP,
        help_text="over the limit: skip the run, or wait until a token is free",
    )  # fmt: skip
    dispatch = models.CharField(
        max_length=16,
        choices=Dispatch.choices,
        default=Dispatch.INLINE,
        help_text=(
            "who starts the runs: the scheduler (in its worker processes), "
            "or Django's TASKS backend (its own workers)"
        ),
    )
    # Follow-ups (docs/chains.md), by schedule code: queued in the transaction that
    # records a run's final outcome. Codes, not foreign keys, so a code default can
    # name another task's record before it exists; a missing one is recorded skipped.
    then = models.JSONField(
        default=list, blank=True, help_text="schedule codes to run after a success"
    )
    catch = models.JSONField(
        default=list, blank=True, help_text="schedule codes to run after a final failure"
    )
    result_as = models.CharField(
        max_length=100,
        blank=True,
        help_text="pass the run's result (then) or its error (catch) to follow-ups as this kwarg",
    )

    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_outcome = models.CharField(max_length=16, choices=RunStatus.choices, blank=True)
    last_error = models.TextField(blank=True)
    # Why a scheduler parked this schedule (its trigger or kwargs could not be
    # planned); empty when it is fine. Saving it through the services clears it.
    invalid_reason = models.TextField(blank=True)
    last_duration = models.FloatField(null=True, blank=True, help_text="seconds")
    run_count = models.PositiveBigIntegerField(default=0)
    error_count = models.PositiveBigIntegerField(default=0)
    # Alerts (docs/alerts.md): final failures in a row, last outcomes, the rules' overrides.
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    pause_reason = models.CharField(max_length=200, blank=True)
    alert = models.JSONField(
        default=dict, blank=True, help_text="alert rules overriding the task's and the global ones"
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Bumped by every operator edit: a form saved against an older version is refused.
    version = models.PositiveIntegerField(default=1)

    objects = ScheduleQuerySet.as_manager()

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
            # Orphans: the task names in use, one seek each (task_names_in_use).
            models.Index(fields=["task_name"], name="schedule_task_idx", condition=EVERY_TASK_NAME),
            # The chain graph (chains.graph): the few schedules that name follow-ups,
            # read without a scan of every schedule's two JSON columns.
            models.Index(fields=["code"], name="schedule_follow_ups_idx", condition=FOLLOW_UPS),
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
                condition=Q(timeout__isnull=True) | Q(timeout__gte=0),
                name="schedule_timeout_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(dispatch__in=Dispatch.values), name="schedule_dispatch_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.code

    def get_trigger(self) -> Trigger:
        """The parsed trigger; raises InvalidTrigger for a spec that no longer parses,
        whatever is wrong with it (the validation gate, within the configured limits).

        Triggers are immutable, so schedules with the same spec share one parse.
        """
        return _parse_spec(_spec_key(self.trigger), trigger_limits())

    @property
    def effective_timeout(self) -> float | None:
        """Seconds a run may take: the schedule's, else SILLO_DEFAULT_TIMEOUT; None: no limit.

        An empty timeout means the default; 0 means none (an explicit opt-out).
        """
        if self.timeout is None:
            return setting("SILLO_DEFAULT_TIMEOUT") or None
        return self.timeout or None

    def preview_times(
        self, count: int, *, after: datetime, operator_zone: tzinfo | None = None
    ) -> list[tuple[datetime, datetime]]:
        """The next fire times in the schedule's zone and the operator's; [] if the
        stored trigger or zone no longer parses."""
        try:
            zone = get_zone(self.tz)
            trigger = self.get_trigger()
            return preview_times(
                trigger, count=count, after=after, zone=zone, operator_zone=operator_zone
            )
        except InvalidTrigger:
            return []  # shown as "invalid" by its flag; the page still renders


def _spec_key(spec: object) -> str:
    try:
        return json.dumps(spec, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(repr(spec)[:1000])  # unsortable or odd stored JSON: refused on parse


def trigger_problem(spec: object) -> str:
    """Why a stored trigger spec cannot be used, or ""."""
    try:
        _parse_spec(_spec_key(spec), trigger_limits())
    except InvalidTrigger as exc:
        return str(exc)
    return ""


@lru_cache(maxsize=10_000)
def _parse_spec(spec_json: str, limits: Limits) -> Trigger:
    return parse_trigger(json.loads(spec_json, cls=StoredJSONDecoder))


class Run(models.Model):
    # No index of its own: run_history_idx leads with it. With a plain one too, PostgreSQL
    # read the newest runs of a schedule holding most of the log through it and sorted
    # them all (72 ms for 100,000 runs, against 0.1 ms in run_history_idx's order).
    schedule = models.ForeignKey(
        Schedule,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="runs",
        db_index=False,
    )
    # Kept so the log outlives a deleted schedule.
    schedule_code = models.CharField(max_length=200)
    task_name = models.CharField(max_length=200)
    kwargs = models.JSONField(default=dict, blank=True, decoder=StoredJSONDecoder)

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
    result = models.JSONField(null=True, blank=True, decoder=StoredJSONDecoder)
    # No index: the runs of a scheduler are looked for only among the running ones
    # (crash recovery), through run_running_idx. A plain index (and PostgreSQL's LIKE
    # index beside it) cost every run's writes two index entries, read by nothing.
    scheduler = models.CharField(max_length=64, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # Who stopped the run: a user name, "cli:<os user>", or empty.
    cancelled_by = models.CharField(max_length=200, blank=True)
    # The run this one follows: the attempt a retry repeats, the upstream run of a follow-up.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    # Hops from the chain's first run (0: not a follow-up); retries keep their run's.
    depth = models.PositiveSmallIntegerField(default=0)
    # False: "this one only", the schedule's follow-ups are not queued after it.
    follow_ups = models.BooleanField(default=True)

    objects = RunQuerySet.as_manager()

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
            # The runs page (run_filters.RunFilters), newest first, keyset pages: all
            # runs, time ranges, reasons and error searches walk this one ...
            models.Index(fields=["-queued_at", "-id"], name="run_recent_idx"),
            # ... a task's or a schedule code's runs (deleted schedules' included) ...
            models.Index(fields=["task_name", "-queued_at", "-id"], name="run_task_recent_idx"),
            models.Index(fields=["schedule_code", "-queued_at", "-id"], name="run_code_recent_idx"),
            # ... and the runs that did not succeed ("all failures of the last hour"):
            # partial, so the common outcome, success, costs it nothing.
            models.Index(
                fields=["-queued_at", "-id"],
                name="run_problem_idx",
                condition=Q(status__in=list(PROBLEM_STATUSES)),
            ),
            # ... and the runs that were not scheduled (manual, retry, catch-up): rare,
            # so a reason filter must not scan the whole log to find them.
            models.Index(
                fields=["-queued_at", "-id"],
                name="run_unscheduled_idx",
                condition=~Q(reason="scheduled"),
            ),  # fmt: skip
            # In-flight counts (max_instances, every claim) and crash recovery. Status is
            # a column too: with the schedule alone, SQLite (no statistics) picked
            # run_history_idx and read every kept run of the schedule to count the few
            # running (44 ms for one with 100,000 runs).
            models.Index(
                fields=["schedule", "status", "scheduler"],
                name="run_running_idx",
                condition=Q(status="running"),
            ),
            # A schedule's queued runs (its page's count, catch-ups to supersede).
            models.Index(
                fields=["schedule", "status"],
                name="run_queued_schedule_idx",
                condition=Q(status="queued"),
            ),
            # The queued runs of the tasks that wait for a worker (queued.to_hold). With
            # run_queued_idx alone SQLite (no statistics) read them through
            # run_task_recent_idx, every kept run of those tasks: 6 s and more a pass
            # beside 10 million runs, in which the scheduler started almost nothing.
            models.Index(
                fields=["task_name", "not_before"],
                name="run_queued_task_idx",
                condition=Q(status="queued"),
            ),
        ]
        constraints = [
            # The safety net behind atomic claims: a slot runs once per attempt.
            models.UniqueConstraint(
                fields=["schedule", "slot", "attempt"],
                name="run_slot_attempt_unique",
                condition=~Q(reason="manual"),
            ),
            # The safety net behind chains: one follow-up per upstream run and schedule.
            models.UniqueConstraint(
                fields=["parent", "schedule_code"],
                name="run_follow_up_unique",
                condition=Q(reason="chained"),
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
    def latest_at(self) -> datetime:
        """The run's latest event: finished, else started, else queued."""
        return self.finished_at or self.started_at or self.queued_at

    @property
    def error_text(self) -> str:
        """The error as pages show it: capped, whenever it was stored."""
        return cap_error(self.error)

    @property
    def traceback_text(self) -> str:
        return cap_traceback(self.traceback)

    @property
    def duration_ms(self) -> int | None:
        duration = self.duration
        return None if duration is None else round(duration.total_seconds() * 1000)

    @property
    def lateness(self) -> timedelta | None:
        """How long after its slot the run started (a run without a slot has none)."""
        if self.slot and self.started_at:
            return self.started_at - self.slot
        return None

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED


class RunOutput(models.Model):
    """What a run printed and logged, capped (schedules/scheduler/capture.py).

    Its own table, so that lists of runs never read the text; saved every few
    seconds while the run is running (an interrupted run keeps what it wrote)
    and once more with its outcome; deleted with its run (retention).
    """

    run = models.OneToOneField(
        Run, primary_key=True, on_delete=models.CASCADE, related_name="captured"
    )
    text = models.TextField(blank=True)
    total = models.PositiveBigIntegerField(default=0, help_text="characters written, cut or not")
    cut = models.PositiveBigIntegerField(default=0, help_text="characters left out mid-way")
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"output of run {self.run_id} ({self.total:,} characters)"


class RunTally(models.Model):
    """A schedule's finished runs in one quarter hour: the schedule page's per-day counts
    read these instead of every run. Written by the database's triggers on the run table,
    never by Python (schedules/run_tallies.py)."""

    # No foreign key: a run's trigger may write for a schedule being deleted in the same
    # transaction; tallies of a deleted schedule are never read and age out.
    schedule_id = models.BigIntegerField()
    quarter = models.BigIntegerField(help_text="the quarter hour: Unix seconds // 900 (UTC)")
    runs = models.IntegerField(default=0)
    succeeded = models.IntegerField(default=0)
    errors = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["schedule_id", "quarter"], name="run_tally_key")
        ]
        # The retention timer's read of the tallies older than the page's days.
        indexes = [models.Index(fields=["quarter"], name="run_tally_age_idx")]

    def __str__(self) -> str:
        return f"schedule {self.schedule_id}, quarter {self.quarter}: {self.runs} run(s)"


class SchedulerInstance(models.Model):
    """A runscheduler process, or a worker process executing enqueued runs."""

    id = models.CharField(max_length=64, primary_key=True)
    kind = models.CharField(max_length=16, default="scheduler")
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    heartbeat_at = models.DateTimeField(default=timezone.now, db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True)
    # Kernel boot id and pid namespace: a pid identifies a process only on the same node.
    node = models.CharField(max_length=100, blank=True)

    objects = SchedulerInstanceQuerySet.as_manager()

    class Meta:
        ordering = ["-heartbeat_at"]

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"


class AuditEvent(models.Model):
    """An operator's action on a schedule: who, from where, when, and what changed."""

    schedule = models.ForeignKey(
        Schedule, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events"
    )
    schedule_code = models.CharField(max_length=200)  # kept when the schedule is deleted
    action = models.CharField(max_length=32)
    actor = models.CharField(max_length=200, blank=True)
    via = models.CharField(max_length=16)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    # Edits: field -> [before, after].
    changes = models.JSONField(default=dict, blank=True)
    detail = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["schedule", "-at"], name="audit_schedule_idx")]

    def __str__(self) -> str:
        return f"{self.schedule_code} {self.action} by {self.actor or '?'}"


class RateBucket(models.Model):
    """A token bucket shared by every process (schedules/ratelimit.py)."""

    key = models.CharField(max_length=200, primary_key=True)  # "task:<name>", "schedule:<id>"
    tokens = models.FloatField()
    refilled_at = models.FloatField(help_text="epoch seconds")

    def __str__(self) -> str:
        return f"{self.key}: {self.tokens:.2f}"


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def usable(self, *, now: datetime | None = None) -> ApiTokenQuerySet:
        """Tokens neither revoked nor expired."""
        now = now or timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    """A user's token for the JSON API. Only its SHA-256 is stored; `prefix` finds it
    and lets the owner recognise it in the list (see schedules/tokens.py)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="what the token is for")
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64, help_text="SHA-256 of the whole token, hex")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def state(self, *, now: datetime | None = None) -> str:
        """'active', 'expired' or 'revoked'."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= (now or timezone.now()):
            return "expired"
        return "active"


# Defined beside their concern, registered with the app by being imported here.
from .alerts.models import (  # noqa: E402
    Channel,
    CounterTotal,
    Incident,
    IncidentEvent,
    Notification,
    RunCounter,
)
