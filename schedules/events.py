"""Run events: the one shape in which the scheduler tells live views about a run.

The engine publishes a `RunEvent` to channel layer groups; the web side
unmarshals it and renders it (it has the attributes the run templates read,
like a Run). Events are hints for browsers; the database holds the truth. A
missing or broken channel layer is logged and never stops scheduling.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from .caps import cap_error
from .layer import listened, send_to_groups, send_to_groups_from_sync

if TYPE_CHECKING:
    from .models import Run


ALL_RUNS_GROUP = "runs"
_TIMES = ("slot", "queued_at", "started_at", "finished_at")


def schedule_group(schedule_id: int) -> str:
    return f"runs.schedule.{schedule_id}"


def run_group(run_id: int) -> str:
    """The group of one run's live output (its run page)."""
    return f"runs.run.{run_id}"


@dataclass(frozen=True)
class RunEvent:
    """What a browser learns of a run when it changes (the result stays in the database)."""

    type: ClassVar[str] = "run.event"

    id: int
    schedule_id: int | None
    schedule_code: str
    task_name: str
    status: str
    reason: str
    attempt: int
    slot: datetime | None
    queued_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    duration_ms: int | None
    error: str
    scheduler: str
    # The run this one follows (a retry's attempt, a follow-up's upstream); last, with a
    # default, so events marshalled by an older process still unmarshal.
    parent_id: int | None = None

    @classmethod
    def from_run(cls, run: Run) -> RunEvent:
        return cls(
            id=run.pk,
            schedule_id=run.schedule_id,
            schedule_code=run.schedule_code,
            task_name=run.task_name,
            status=run.status,
            reason=run.reason,
            attempt=run.attempt,
            slot=run.slot,
            queued_at=run.queued_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            duration_ms=run.duration_ms,
            error=cap_error(run.error),
            scheduler=run.scheduler,
            parent_id=run.parent_id,
        )

    @property
    def latest_at(self) -> datetime | None:
        return self.finished_at or self.started_at or self.queued_at

    @property
    def error_text(self) -> str:
        return cap_error(self.error)

    def marshal(self) -> dict[str, Any]:
        """A channel layer message (msgpack-safe: times as ISO-8601 text)."""
        data = dict(vars(self))  # flat fields: no deep copy (asdict was a hot spot in bursts)
        for key in _TIMES:
            data[key] = data[key].isoformat() if data[key] else None
        return {"type": self.type, "run": data}

    @classmethod
    def unmarshal(cls, message: dict[str, Any]) -> RunEvent:
        data = dict(message["run"])
        for key in _TIMES:
            data[key] = datetime.fromisoformat(data[key]) if data.get(key) else None
        return cls(**data)

    def groups(self) -> list[str]:
        return run_groups(self.schedule_id)


def run_groups(schedule_id: int | None) -> list[str]:
    """The groups a run's events go to: every run's, and its schedule's."""
    if schedule_id is None:
        return [ALL_RUNS_GROUP]
    return [ALL_RUNS_GROUP, schedule_group(schedule_id)]


async def publish_run(run: Run) -> None:
    """Send a run's event to the all-runs group and its schedule's group."""
    await publish_run_event(RunEvent.from_run(run))


async def publish_run_event(event: RunEvent) -> None:
    """Send an event taken earlier (the run as it was then) to its groups."""
    groups = listened(event.groups())
    if groups:  # else no page is open to show it: not even marshalled
        await send_to_groups(groups, event.marshal(), what=f"run event for run {event.id}")


@dataclass(frozen=True)
class RunOutputEvent:
    """Text a running run printed or logged since the last event, for its run page.

    `offset` counts the characters the run wrote before `text`: a page that
    already shows more skips the overlap, one that shows less notes the gap.
    """

    type: ClassVar[str] = "run.output"

    run_id: int
    offset: int
    text: str

    def marshal(self) -> dict[str, Any]:
        return {"type": self.type, "output": asdict(self)}

    @classmethod
    def unmarshal(cls, message: dict[str, Any]) -> RunOutputEvent:
        return cls(**message["output"])


async def publish_output(run_id: int, offset: int, text: str) -> None:
    """Send a chunk of a run's output to its run page's group."""
    if not text:
        return
    event = RunOutputEvent(run_id=run_id, offset=offset, text=text)
    await send_to_groups([run_group(run_id)], event.marshal(), what=f"output of run {run_id}")


# New schedules (a list page shows a notice): changes of one go to its own group.
SCHEDULES_GROUP = "schedules"


@dataclass(frozen=True)
class ScheduleEvent:
    """An operator changed a schedule: pages showing it update, so nobody acts on a
    stale page. Sent after the change commits, by `announce_change`."""

    type: ClassVar[str] = "schedule.event"

    schedule_id: int
    code: str
    action: str
    actor: str
    at: str  # ISO-8601

    def marshal(self) -> dict[str, Any]:
        return {"type": self.type, "schedule": asdict(self)}

    @classmethod
    def unmarshal(cls, message: dict[str, Any]) -> ScheduleEvent:
        return cls(**message["schedule"])

    def groups(self) -> list[str]:
        if self.action == "create":
            return [schedule_group(self.schedule_id), SCHEDULES_GROUP]
        return [schedule_group(self.schedule_id)]


def announce_change(event: ScheduleEvent) -> None:
    """Publish a schedule event (from sync code, after the commit); never raises."""
    what = f"schedule event for {event.code}"
    send_to_groups_from_sync(event.groups(), event.marshal(), what=what)
