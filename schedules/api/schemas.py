"""The API's request and response bodies (their JSON Schema is the OpenAPI document's)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, StrictFloat, StrictInt

from ..choices import Dispatch, Misfire, Overlap, RateMode, RunReason, RunStatus, ScheduleStatus
from ..inputs import OPTION_LIMITS

TRIGGER_HELP = (
    "A trigger spec (docs/timing.md): "
    '{"kind": "cron", "expression": "0 9 * * 1-5", "tz": "Europe/Berlin"}, '
    '{"kind": "interval", "every": 3600}, {"kind": "date", "at": "2027-01-01T09:00", '
    '"tz": "UTC"}, or {"kind": "compound", "mode": "any"|"all", "children": [...]}'
)

StatusName = Literal[tuple(ScheduleStatus.values)]  # type: ignore[valid-type]
RunStatusName = Literal[tuple(RunStatus.values)]  # type: ignore[valid-type]
ReasonName = Literal[tuple(RunReason.values)]  # type: ignore[valid-type]


# PostgreSQL refuses the NUL character in text: a string parameter may not carry one.
NO_NUL = r"^[^\x00]*$"


# A row written around the API and the dashboard (a bad migration, a manual edit) may hold
# any JSON in its trigger or kwargs; every page shows such a row as it is (docs/security.md),
# and typing these outputs as objects would turn that one row into a 500 for the whole list.
AS_STORED = (
    "; a damaged record's value is returned as stored, whatever JSON it holds "
    "(a part too long or too deeply nested to read comes as its text, a string)"
)


PRIORITY_LOW, PRIORITY_HIGH = OPTION_LIMITS["priority"]


def _limit(name: str, **extra: Any) -> Any:
    low, high = OPTION_LIMITS[name]
    # Unset (None) means "keep" on update and "the task's default" on create.
    return Field(default=None, ge=low, le=high, **extra)


class Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class OptionsIn(Strict):
    """Execution options; any left out keep their value (on create: the task's own)."""

    timeout: StrictFloat | None = _limit(
        "timeout",
        allow_inf_nan=False,
        description="seconds; 0: no timeout; null: the default (SILLO_DEFAULT_TIMEOUT)",
    )
    max_attempts: StrictInt = _limit("max_attempts")
    retry_delay: StrictFloat = _limit("retry_delay", allow_inf_nan=False, description="seconds")
    max_instances: StrictInt = _limit("max_instances")
    overlap: Literal[tuple(Overlap.values)] = None  # type: ignore[valid-type]
    misfire: Literal[tuple(Misfire.values)] = None  # type: ignore[valid-type]
    misfire_grace: StrictFloat = _limit("misfire_grace", allow_inf_nan=False, description="seconds")
    priority: (
        Annotated[StrictInt, Field(ge=PRIORITY_LOW, le=PRIORITY_HIGH)]
        | Annotated[str, Field(max_length=20)]
    ) = Field(default=None, description="an integer, or low, normal, high, critical")
    rate_limit: StrictInt | None = _limit(
        "rate_limit", description="at most this many runs a rate_period; null: no limit"
    )
    rate_period: StrictFloat = _limit("rate_period", allow_inf_nan=False, description="seconds")
    rate_mode: Literal[tuple(RateMode.values)] = Field(  # type: ignore[valid-type]
        default=None, description="a run over the limit: skip it, or wait for room"
    )
    dispatch: Literal[tuple(Dispatch.values)] = None  # type: ignore[valid-type]
    then: list[Annotated[str, Field(max_length=200)]] = Field(
        default=None, max_length=100, description="follow-up schedule codes run after a success"
    )
    catch: list[Annotated[str, Field(max_length=200)]] = Field(
        default=None,
        max_length=100,
        description="follow-up schedule codes run after a final failure (retries exhausted)",
    )
    result_as: str = Field(
        default=None,
        max_length=100,
        description="the kwarg follow-ups receive the outcome in (result or failure); '': none",
    )


class OptionsOut(Schema):
    timeout: float | None
    max_attempts: int
    retry_delay: float
    max_instances: int
    overlap: str
    misfire: str
    misfire_grace: float
    priority: int
    rate_limit: int | None = None
    rate_period: float = 60.0
    rate_mode: str = "skip"
    dispatch: str
    then: list[str] = []
    catch: list[str] = []
    result_as: str = ""


class ScheduleCreate(Strict):
    code: str = Field(
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="unique; letters, digits and . _ : - (like a task name)",
    )
    task_name: str = Field(min_length=1, max_length=200, pattern=NO_NUL)
    trigger: dict[str, Any] = Field(description=TRIGGER_HELP)
    kwargs: dict[str, Any] = Field(default_factory=dict, description="the task's keyword arguments")
    tz: str = Field(
        default="", max_length=64, description="zone to show times in; empty: the trigger's"
    )
    options: OptionsIn = Field(default_factory=OptionsIn)


class ScheduleUpdate(Strict):
    """Only the fields given change; the code never does. With `version` (from the
    schedule you read), a record changed since is refused (409) instead of overwritten."""

    version: StrictInt = Field(default=None, ge=1)
    task_name: str = Field(default=None, min_length=1, max_length=200, pattern=NO_NUL)
    trigger: dict[str, Any] = Field(default=None, description=TRIGGER_HELP)
    kwargs: dict[str, Any] = Field(default=None)
    tz: str = Field(default=None, max_length=64, pattern=NO_NUL)
    options: OptionsIn = Field(default=None)


class RunNowIn(Strict):
    kwargs: dict[str, Any] | None = Field(
        default=None, description="merged over the schedule's kwargs, for this run only"
    )
    follow_ups: bool = Field(
        default=True, description="false: this one only, its follow-ups are not queued"
    )


class PreviewIn(Strict):
    trigger: dict[str, Any] = Field(description=TRIGGER_HELP)
    tz: str | None = Field(
        default=None, max_length=64, pattern=NO_NUL, description="zone of the times shown"
    )
    count: StrictInt = Field(default=10, ge=1, le=100)
    after: str | None = Field(
        default=None,
        max_length=64,
        pattern=NO_NUL,
        description="ISO-8601 start, with an offset or local to tz",
    )


class PreviewOut(Schema):
    description: str
    zone: str
    times: list[datetime]


class ScheduleOut(Schema):
    id: int
    version: int
    code: str
    task_name: str
    status: str
    source: str
    trigger: Any = Field(description=f"the trigger spec (docs/timing.md){AS_STORED}")
    description: str
    tz: str
    kwargs: Any = Field(description=f"the task's keyword arguments, an object{AS_STORED}")
    next_run_at: datetime | None
    last_run_at: datetime | None
    last_outcome: str | None
    last_error: str | None
    last_duration_ms: int | None
    runs: int
    errors: int
    flags: list[str]
    options: OptionsOut


class ScheduleDetailOut(ScheduleOut):
    next_fire_times: list[datetime]


class ScheduleList(Schema):
    count: int
    results: list[ScheduleOut]


class RunOut(Schema):
    id: int
    schedule_id: int | None
    code: str
    task_name: str
    status: str
    reason: str
    attempt: int
    slot: datetime | None
    queued_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    duration_ms: int | None
    error: str | None
    scheduler: str | None
    requested_by: str | None
    cancelled_by: str | None
    parent_id: int | None = Field(default=None, description="the run this one follows")
    depth: int = Field(default=0, description="follow-ups from the chain's first run")


class RunDetailOut(RunOut):
    kwargs: Any = Field(description=f"the keyword arguments of this run, an object{AS_STORED}")
    result: Any = None
    traceback: str | None


class RunOutputOut(Schema):
    run_id: int
    status: str
    finished: bool = Field(
        description="false while the run may still write more (a run cancelled while it "
        "ran: for 10 s after the cancel, while its scheduler stops it and saves the rest)"
    )
    text: str = Field(
        description="what the run printed and logged: the head and the tail within "
        "SILLO_OUTPUT_MAX_CHARS, with a note of what was cut between them"
    )
    total: int = Field(description="characters written, cut or not")
    cut: int = Field(description="characters left out in the middle")
    updated_at: datetime | None = Field(description="when the text was last saved, or null")


class RunPage(Schema):
    results: list[RunOut]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next (older) page")
    next: str | None = Field(description="the URL of the next page, or null on the last")


class TaskOut(Schema):
    name: str
    qualname: str
    is_async: bool
    isolation: str = Field(description="process (a worker process) or inline (the scheduler)")
    duplicate: bool
    problems: list[str]
    default_trigger: dict[str, Any] | None
    default_description: str | None
    options: OptionsOut
    parameters: list[str]


class TaskList(Schema):
    results: list[TaskOut]
    failed_imports: dict[str, str] = Field(description="module -> the error it raised")


class StatsOut(Schema):
    jobs: dict[str, int] = Field(description="total, and by status")
    runs: dict[str, int] = Field(description="total, errors, running")
    schedulers: int = Field(description="live schedulers")
    uptime_seconds: int | None = Field(description="since the oldest live scheduler started")
    queue: dict[str, Any] = Field(
        description=(
            "queued, due, oldest_due_age_seconds, oldest_slot_late_seconds, "
            "backlog (HEALTHY, DEGRADED, STALLED)"
        )
    )
