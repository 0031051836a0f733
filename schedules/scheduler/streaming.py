"""A running run's output, on its way: to its page live, and to the database now and then.

The engine starts `stream_output` beside each run that captures output and
cancels it when the run ends (the final text is then written with the outcome).
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
