"""A running run's output, on its way: to its page live, and to the database now and then.

The engine gives each run that captures output an `OutputStream`: it starts
`stream_output` when the run first prints and cancels it when the run ends
(the final text is then written with the outcome). A run that prints nothing,
as most do, costs no streaming task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..events import publish_output
from . import outcomes
from .capture import OutputBuffer
from .clock import Clock

logger = logging.getLogger(__name__)

# Real seconds, not the scheduler's clock: the live stream is about the browser's time.
LIVE_INTERVAL = 0.25  # new output goes to the run's page this often
SAVE_INTERVAL = 2.0  # and the text so far is saved this often (a page opened mid-run starts there)


async def stream_output(
    run_id: int, output: OutputBuffer, *, db: Callable[..., Awaitable[Any]], clock: Clock
) -> None:
    """Until cancelled: publish the run's new output, and save it when it changed."""
    saved_at = time.monotonic()
    while True:
        await asyncio.sleep(LIVE_INTERVAL)
        await publish_output(run_id, *output.take_pending())
        if output.unsaved() and time.monotonic() - saved_at >= SAVE_INTERVAL:
            saved_at = time.monotonic()
            text, total, cut = output.snapshot()
            try:
                await db(
                    outcomes.save_output, run_id=run_id, text=text, total=total, cut=cut,
                    now=clock.now(),
                )  # fmt: skip
            except Exception as exc:  # the outcome saves it anyway
                logger.warning("output of run %s not saved yet: %s", run_id, exc)
            output.mark_saved(total)


class OutputStream:
    """Streams a run's output from its first write until `stop()`."""

    def __init__(
        self,
        run_id: int,
        output: OutputBuffer,
        *,
        db: Callable[..., Awaitable[Any]],
        clock: Clock,
    ) -> None:
        self._args = (run_id, output)
        self._db, self._clock = db, clock
        self._task: asyncio.Task | None = None
        self._stopped = False
        loop = asyncio.get_running_loop()
        # Writes come from worker replies on the loop, or from an inline task's thread.
        output.on_first_write = lambda: loop.call_soon_threadsafe(self._start)

    def _start(self) -> None:
        if self._task is None and not self._stopped:
            self._task = asyncio.create_task(
                stream_output(*self._args, db=self._db, clock=self._clock)
            )

    def stop(self) -> None:
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
