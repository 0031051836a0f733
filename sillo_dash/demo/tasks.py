"""The reference project's demonstration tasks; no code default: `manage.py demo` schedules them."""

from __future__ import annotations

import asyncio
import random
import time

import schedules


@schedules.task("demo.heartbeat")
def heartbeat() -> str:
    """Quick and always fine."""
    return "ok"


@schedules.task("demo.report", timeout=30)
async def report(region: str = "eu", rows: int = 100) -> dict:
    """An async task that takes a moment and returns a summary."""
    await asyncio.sleep(random.uniform(0.5, 2.0))
    return {"region": region, "rows": rows}


@schedules.task("demo.flaky", max_attempts=3, retry_delay=2)
def flaky(failure_rate: float = 0.5) -> str:
    """Fails now and then, to show retries and errors."""
    if random.random() < failure_rate:
        raise RuntimeError("the upstream service did not answer")
    return "delivered"


@schedules.task("demo.slow", timeout=5)
def slow(seconds: float = 8.0) -> None:
    """Overruns its timeout, to show timed-out runs."""
    time.sleep(seconds)
