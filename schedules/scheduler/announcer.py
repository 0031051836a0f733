"""Run announcements for the live pages: sent beside the scheduler's work, never in its way.

A run's events reach the channel layer in the order they happened (its `queued`
before its `running` before the last of its output before its end), each sent
after the one before it for the same run; nothing the scheduler does waits for
them, so a run's end is recorded at its time. A hung layer costs each
send its bound (schedules/layer.py), never a pass or a run's start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

from ..events import RunEvent, publish_output, publish_run_event

if TYPE_CHECKING:
    from ..models import Run


class Announcer:
    def __init__(self) -> None:
        # run id -> its latest announcement, which waits for the ones before it
        self._latest: dict[int, asyncio.Task] = {}

    def announce(self, run: Run) -> None:
        """Send the run as it is now (its event is taken at once), after its earlier events."""
        self._after_earlier(run.pk, partial(publish_run_event, RunEvent.from_run(run)))

    def announce_output(self, run_id: int, offset: int, text: str) -> None:
        """Send the last of a run's output to its run page, before the run's end."""
        if not text:
            return
        self._after_earlier(run_id, partial(publish_output, run_id, offset, text))

    async def drain(self, timeout: float | None = None) -> None:
        """Until every announcement made so far has been sent or given up (or `timeout`)."""
        if self._latest:
            await asyncio.wait(list(self._latest.values()), timeout=timeout)

    def _after_earlier(self, run_id: int, send: Callable[[], Awaitable[None]]) -> None:
        before = self._latest.get(run_id)
        sending = asyncio.create_task(self._send(before, send), name=f"announce-run-{run_id}")
        self._latest[run_id] = sending
        sending.add_done_callback(partial(self._forget, run_id))

    @staticmethod
    async def _send(before: asyncio.Task | None, send: Callable[[], Awaitable[None]]) -> None:
        if before is not None:
            await asyncio.wait([before])  # its outcome is its own: only the order matters
        await send()

    def _forget(self, run_id: int, sending: asyncio.Task) -> None:
        if self._latest.get(run_id) is sending:
            del self._latest[run_id]
