"""Run events: the one shape in which the scheduler tells live views about a run.

The engine publishes a `RunEvent` to channel layer groups; the web side
unmarshals it and renders it (it has the attributes the run templates read,
like a Run). Events are hints for browsers; the database holds the truth. A
missing or broken channel layer is logged and never stops scheduling.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from .caps import cap_error
from .layer import listened, send_to_each_group, send_to_groups, send_to_groups_from_sync

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
        """A channel layer message of this event alone (batches: `publish_run_events`)."""
        return {"type": self.type, "run": self.data()}

    def data(self) -> dict[str, Any]:
        """The event's fields, msgpack-safe: times as ISO-8601 text."""
        data = dict(vars(self))  # flat fields: no deep copy (asdict was a hot spot in bursts)
        for key in _TIMES:
            data[key] = data[key].isoformat() if data[key] else None
        return data

    @classmethod
    def from_data(cls, fields: dict[str, Any]) -> RunEvent:
        data = dict(fields)
        for key in _TIMES:
            data[key] = datetime.fromisoformat(data[key]) if data.get(key) else None
        return cls(**data)

    @classmethod
    def unmarshal(cls, message: dict[str, Any]) -> RunEvent:
        return cls.from_data(message["run"])

    def groups(self) -> list[str]:
        return run_groups(self.schedule_id)


def run_groups(schedule_id: int | None) -> list[str]:
    """The groups a run's events go to: every run's, and its schedule's."""
    if schedule_id is None:
        return [ALL_RUNS_GROUP]
    return [ALL_RUNS_GROUP, schedule_group(schedule_id)]


# Run events travel in batches: one message per group carries every event of the
# batch that belongs there, in the order they happened, under "runs". Each message
# costs every listening socket a trip through the channel layer and its server, so
# a scheduler that announces 500 runs a second to 50 open pages sends a few dozen
# messages a second, not 25,000 (docs/dashboard.md, "Live updates"). The message
# keeps the single event's type and carries the batch's last event under "run" as
# well: a web process from before batches shows that one (a page catches up on the
# rest when it reloads) instead of failing on a type it has no handler for, so
# schedulers and web processes can be upgraded in any order.


def unmarshal_run_events(
    message: dict[str, Any], *, schedule_ids: Container[int | None] | None = None
) -> list[RunEvent]:
    """The events of a batch (or the single event of a message from an older process);
    with `schedule_ids`, only those of these schedules (the others are not unpacked)."""
    batch = message["runs"] if "runs" in message else [message["run"]]
    return [
        RunEvent.from_data(fields)
        for fields in batch
        if schedule_ids is None or fields.get("schedule_id") in schedule_ids
    ]


async def publish_run(run: Run) -> None:
    """Send a run's event to the all-runs group and its schedule's group."""
    await publish_run_events([RunEvent.from_run(run)])


async def publish_run_events(events: Sequence[RunEvent]) -> None:
    """Send events taken earlier (each run as it was then) to their groups, one message
    per group: the all-runs group gets them all, a schedule's group its own."""
    per_group: dict[str, list[int]] = {}  # group -> the indexes of its events
    for index, event in enumerate(events):
        for group in event.groups():
            per_group.setdefault(group, []).append(index)
    groups = listened(per_group)
    if not groups:
        return  # no page is open to show them: not even marshalled
    data = [event.data() for event in events]
    messages = {
        group: {
            "type": RunEvent.type,
            "run": data[per_group[group][-1]],  # for a web process from before batches
            "runs": [data[index] for index in per_group[group]],
        }
        for group in groups
    }
    first = events[0].id
    what = f"run event for run {first}" if len(events) == 1 else f"{len(events)} run events"
    await send_to_each_group(messages, what=what)


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


# Every schedule change, for the list pages; its schedule's group gets it too.
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
        """Its schedule's page, and every list page (each shows the changes of its own
        rows, and a new schedule's notice): list pages take their run events from the
        all-runs group too, so each gets one message per batch, not one per row."""
        return [schedule_group(self.schedule_id), SCHEDULES_GROUP]


def announce_change(event: ScheduleEvent) -> None:
    """Publish a schedule event (from sync code, after the commit); never raises."""
    what = f"schedule event for {event.code}"
    send_to_groups_from_sync(event.groups(), event.marshal(), what=what)
