"""The line of run announcements: in order, never waited for, bounded."""

from __future__ import annotations

import asyncio
import re

import pytest

from schedules.models import Run, RunReason, RunStatus
from schedules.scheduler.announcer import Announcer


def run(pk: int, status: str = RunStatus.RUNNING) -> Run:
    return Run(pk=pk, schedule_code=f"s{pk}", task_name="test.echo", status=status,
               reason=RunReason.SCHEDULED)  # fmt: skip


@pytest.fixture(autouse=True)
def _pages_open(every_group_listened) -> None:
    """The line's own behaviour: a page is open on every group."""


def hold_sends(monkeypatch) -> tuple[asyncio.Event, list[tuple[int, str]]]:
    """Sends wait until the returned event is set; what was sent is listed."""
    released, sent = asyncio.Event(), []

    async def slow(event) -> None:
        await released.wait()
        sent.append((event.id, event.status))

    monkeypatch.setattr("schedules.scheduler.announcer.publish_run_event", slow)
    return released, sent


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

    async def flaky(event) -> None:
        if event.id == 1:
            raise RuntimeError("a backend that raises past the layer's guard")
        sent.append(event.id)

    monkeypatch.setattr("schedules.scheduler.announcer.publish_run_event", flaky)
    announcer = Announcer()
    for pk in (1, 2, 3):
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
