"""Run announcements for the live pages: sent beside the scheduler's work, never in its way.

Announcements wait in one line and one task sends them, oldest first: a run's
events reach the channel layer in the order they happened (its `queued` before
its `running` before the last of its output before its end; the output it
prints while running streams to its run page apart, schedules/scheduler/
streaming.py), and nothing the scheduler does waits for them, so a hung layer
(each send bounded by schedules/layer.py) delays no run's start or record. The
line is bounded: past LIMIT the oldest announcements are dropped (they are
hints; pages catch up from the database when they reconnect or reload), and
the drops are logged, at most once every DROP_LOG_EVERY seconds.

A run's event still waiting when the run changes again is replaced in its place
by the newer one: pages show a run as it is, so in a burst that outpaces the
layer (a thousand runs over Redis) each run costs a send or two, not one per
step it went through.

Run events go out in batches (schedules/events.py, `publish_run_events`): the
sender takes every run event waiting at the head of the line, up to BATCH, and
after sending them pauses PACE before it looks again. An event that finds the
line idle goes out at once; under load the events of each PACE share one
message per group. Every message costs each open page's socket a trip through
the channel layer and the web server: one message per event sent 25,000 a
second to 50 pages at 500 runs a second, and the pages got under 1% of them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

from ..events import RunEvent, publish_output, publish_run_events, run_groups
from ..layer import listened

if TYPE_CHECKING:
    from ..models import Run

logger = logging.getLogger(__name__)

LIMIT = 10_000
DROP_LOG_EVERY = 60.0
# Run events a message carries at most (a few hundred bytes each): 10,000 a second
# at one batch every PACE; past that the line grows and, at LIMIT, drops its oldest.
BATCH = 500
PACE = 0.05  # seconds between batches: a page gets at most 20 messages a second


class _RunEntry:
    """A run's event in the line, replaced in place while it waits (see above)."""

    __slots__ = ("event",)

    def __init__(self, event: RunEvent) -> None:
        self.event = event


Announcement = _RunEntry | Callable[[], Awaitable[None]]  # a run's event, or a send


class Announcer:
    def __init__(
        self,
        limit: int = LIMIT,
        *,
        pace: float = PACE,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._line: deque[Announcement] = deque()
        self._pace, self._sleep = pace, sleep
        self._entry_of_run: dict[int, _RunEntry] = {}  # run id -> its event waiting in the line
        self._limit = limit
        self._dropped = 0
        self._drops_logged_at: float | None = None
        self._sender: asyncio.Task | None = None
        self._waiting = asyncio.Event()  # set while the line has something to send
        self._emptied = asyncio.Event()  # set while nothing is waiting or being sent
        self._emptied.set()

    def announce(self, run: Run) -> None:
        """Send the run as it is now (its event is taken at once), after earlier events;
        if the run's previous event has not been sent yet, this one takes its place."""
        entry = self._entry_of_run.get(run.pk)
        if entry is None and not listened(run_groups(run.schedule_id)):
            return  # no page open would show it: its event is not even taken
        event = RunEvent.from_run(run)
        if entry is not None:
            entry.event = event
            return
        entry = self._entry_of_run[run.pk] = _RunEntry(event)
        self._add(entry)

    def announce_output(self, run_id: int, offset: int, text: str) -> None:
        """Send the last of a run's output to its run page, before the run's end."""
        if text:
            self._entry_of_run.pop(run_id, None)  # what the run does next goes after this
            self._add(partial(publish_output, run_id, offset, text))

    async def drain(self, timeout: float | None = None) -> None:
        """Until everything announced so far has been sent or given up (or `timeout`)."""
        try:
            await asyncio.wait_for(self._emptied.wait(), timeout)
        except TimeoutError:
            logger.warning("%d run announcement(s) left unsent", len(self._line))

    async def close(self, timeout: float) -> None:
        await self.drain(timeout)
        if self._sender is not None:
            self._sender.cancel()

    def _add(self, send: Announcement) -> None:
        if len(self._line) >= self._limit:
            self._forget(self._line.popleft())
            self._dropped += 1
            self._log_drops()
        self._line.append(send)
        self._emptied.clear()
        self._waiting.set()
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_forever(), name="run-announcements")

    async def _send_forever(self) -> None:
        while True:
            await self._waiting.wait()
            while self._line:
                head = self._line[0]
                if isinstance(head, _RunEntry):
                    send = partial(publish_run_events, self._take_batch())
                else:
                    send = self._line.popleft()
                try:
                    await send()  # bounded (schedules/layer.py)
                except Exception:  # the line must outlive any one announcement
                    logger.exception("a run announcement failed")
                if isinstance(head, _RunEntry):
                    if not self._line:
                        self._idle()
                    await self._sleep(self._pace)  # what comes meanwhile shares a batch
            self._idle()

    def _take_batch(self) -> list[RunEvent]:
        """The run events at the head of the line, up to BATCH; a newer event of any
        of their runs goes after them."""
        batch: list[RunEvent] = []
        while self._line and isinstance(self._line[0], _RunEntry) and len(batch) < BATCH:
            entry = self._line.popleft()
            self._forget(entry)
            batch.append(entry.event)
        return batch

    def _idle(self) -> None:
        self._log_drops(at_once=True)
        if not self._line:
            self._waiting.clear()
            self._emptied.set()

    def _forget(self, send: Announcement) -> None:
        if isinstance(send, _RunEntry) and self._entry_of_run.get(send.event.id) is send:
            del self._entry_of_run[send.event.id]

    def _log_drops(self, *, at_once: bool = False) -> None:
        """Say how many were dropped: when the line empties, or once a minute meanwhile."""
        now = time.monotonic()
        last = self._drops_logged_at
        if self._dropped and (at_once or last is None or now - last >= DROP_LOG_EVERY):
            logger.warning("%d run announcement(s) dropped: the channel layer is slow",
                           self._dropped)  # fmt: skip
            self._dropped, self._drops_logged_at = 0, now
