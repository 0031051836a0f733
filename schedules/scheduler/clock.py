"""Time for the scheduler, injectable so tests drive it without sleeping."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...

    def monotonic(self) -> float:
        """Seconds on a clock that never steps: for intervals inside one process."""

    async def wait(self, seconds: float, wake: asyncio.Event) -> None:
        """Return after `seconds`, or as soon as `wake` is set."""


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def wait(self, seconds: float, wake: asyncio.Event) -> None:
        if seconds > 0 and not wake.is_set():
            try:
                async with asyncio.timeout(seconds):
                    await wake.wait()
            except TimeoutError:
                pass
        wake.clear()
