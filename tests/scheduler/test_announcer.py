"""The line of run announcements: in order, never waited for, bounded."""

from __future__ import annotations

import asyncio
import re

import pytest

from schedules.models import Run, RunReason, RunStatus
from schedules.scheduler.announcer import BATCH, PACE, Announcer


def run(pk: int, status: str = RunStatus.RUNNING) -> Run:
    return Run(pk=pk, schedule_code=f"s{pk}", task_name="test.echo", status=status,
               reason=RunReason.SCHEDULED)  # fmt: skip


@pytest.fixture(autouse=True)
def _pages_open(every_group_listened) -> None:
    """The line's own behaviour: a page is open on every group."""


def hold_sends(monkeypatch, batches: list | None = None) -> tuple[asyncio.Event, list]:
    """Sends wait until the returned event is set; what was sent is listed, each event
    as (run id, status); `batches` gets each message's events."""
    released, sent = asyncio.Event(), []

    async def slow(events) -> None:
        await released.wait()
        sent.extend((event.id, event.status) for event in events)
        if batches is not None:
            batches.append([event.id for event in events])

    monkeypatch.setattr("schedules.scheduler.announcer.publish_run_events", slow)
    return released, sent


class Pauses:
    """The line's pauses between batches, ended by the test (no real time passes)."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.ended = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        await self.ended.wait()


async def test_a_runs_events_go_out_in_the_order_they_happened(monkeypatch) -> None:
    released, sent = hold_sends(monkeypatch)
    announcer = Announcer()
    first = run(1)
    announcer.announce(first)
    await asyncio.sleep(0)  # being sent: what happens next goes after it
    first.status = RunStatus.SUCCEEDED  # the event was taken when announced
    announcer.announce(first)
    announcer.announce(run(2, RunStatus.QUEUED))
    released.set()
    await announcer.drain()
    assert sent == [(1, "running"), (1, "succeeded"), (2, "queued")]


async def test_an_event_still_waiting_gives_its_place_to_the_runs_newer_one(monkeypatch) -> None:
    released, sent = hold_sends(monkeypatch)
    announcer = Announcer()
    announcer.announce(run(1))
    await asyncio.sleep(0)  # run 1's event is being sent; the layer is slow
    for status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SUCCEEDED):
        announcer.announce(run(2, status))
    announcer.announce(run(3, RunStatus.QUEUED))
    released.set()
    await announcer.drain()
    # Run 2 as it is now, in the place its first event took: one send, not three.
    assert sent == [(1, "running"), (2, "succeeded"), (3, "queued")]


async def test_a_runs_end_goes_after_the_last_of_its_output(monkeypatch) -> None:
    released, sent = hold_sends(monkeypatch)

    async def output(run_id: int, offset: int, text: str) -> None:
        sent.append((run_id, text))

    monkeypatch.setattr("schedules.scheduler.announcer.publish_output", output)
    announcer = Announcer()
    running = run(1)
    announcer.announce(running)
    announcer.announce_output(1, 0, "last words")
    running.status = RunStatus.FAILED
    announcer.announce(running)
    released.set()
    await announcer.drain()
    assert sent == [(1, "running"), (1, "last words"), (1, "failed")]


async def test_past_its_limit_the_oldest_announcements_are_dropped_and_said(
    monkeypatch, caplog
) -> None:
    released, sent = hold_sends(monkeypatch)
    announcer = Announcer(limit=3)
    for pk in range(1, 6):
        announcer.announce(run(pk))  # nothing has been sent yet: the line holds them
    released.set()
    await announcer.drain()
    assert sent == [(3, "running"), (4, "running"), (5, "running")]
    said = re.findall(r"(\d+) run announcement\(s\) dropped", caplog.text)
    assert sum(map(int, said)) == 2  # the first drop at once, the rest when the line emptied


async def test_a_drain_gives_up_after_its_timeout_on_a_hung_layer(monkeypatch, caplog) -> None:
    released, sent = hold_sends(monkeypatch)
    announcer = Announcer()
    announcer.announce(run(1))
    announcer.announce(run(2))
    await announcer.close(timeout=0.05)
    assert sent == []
    assert "run announcement(s) left unsent" in caplog.text


async def test_an_announcement_that_fails_does_not_end_the_line(monkeypatch, caplog) -> None:
    sent = []

    async def flaky(events) -> None:
        if events[0].id == 1:
            raise RuntimeError("a backend that raises past the layer's guard")
        sent.extend(event.id for event in events)

    monkeypatch.setattr("schedules.scheduler.announcer.publish_run_events", flaky)
    announcer = Announcer(pace=0)
    announcer.announce(run(1))
    await asyncio.sleep(0)  # run 1 goes out alone, and fails
    for pk in (2, 3):
        announcer.announce(run(pk))
    await announcer.drain(timeout=5)
    assert sent == [2, 3]
    assert "a run announcement failed" in caplog.text


async def test_drops_are_said_while_the_line_never_empties(monkeypatch, caplog) -> None:
    """A layer that stays hung under load: the line never empties, the drops are still said."""
    released, sent = hold_sends(monkeypatch)
    announcer = Announcer(limit=2)
    for pk in range(1, 5):
        announcer.announce(run(pk))
    await asyncio.sleep(0)  # the sender takes the first and hangs on it
    assert "run announcement(s) dropped" in caplog.text
    released.set()
    await announcer.drain()


async def test_an_idle_line_sends_at_once_and_a_busy_one_batches_its_events(monkeypatch) -> None:
    """Each message costs every open page a trip through the layer: while the line
    pauses after a send, what is announced waits and goes out together."""
    batches: list[list[int]] = []
    released, sent = hold_sends(monkeypatch, batches)
    released.set()
    pauses = Pauses()
    announcer = Announcer(sleep=pauses)
    announcer.announce(run(1))
    for _ in range(3):
        await asyncio.sleep(0)
    assert batches == [[1]]  # the line was idle: no wait before the first send
    assert pauses.asked == [PACE]  # and now it pauses
    for pk in range(2, 12):
        announcer.announce(run(pk))
    for _ in range(3):
        await asyncio.sleep(0)
    assert batches == [[1]]  # held for the pause
    pauses.ended.set()
    await announcer.drain(timeout=5)
    assert batches == [[1], list(range(2, 12))]  # one message for the ten of them


async def test_a_batch_holds_at_most_BATCH_events(monkeypatch) -> None:
    batches: list[list[int]] = []
    released, sent = hold_sends(monkeypatch, batches)
    announcer = Announcer(pace=0)
    announcer.announce(run(1))
    await asyncio.sleep(0)  # run 1 is being sent; the layer is slow
    for pk in range(2, BATCH + 52):
        announcer.announce(run(pk))
    released.set()
    await announcer.drain(timeout=5)
    assert [len(batch) for batch in batches] == [1, BATCH, 50]
    assert [pk for pk, _ in sent] == list(range(1, BATCH + 52))
