"""The run pipeline: factories `(handler, run) -> handler`, outermost first.

A handler is `async def handler(run: RunContext) -> result`. The global list
is `SILLO_MIDDLEWARE` (dotted paths); a task's own `middleware=` factories sit
inside it, and the task function is innermost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

logger = logging.getLogger("schedules.runs")

Handler = Callable[["RunContext"], Awaitable[Any]]
Middleware = Callable[[Handler, "RunContext"], Handler]


class RunTimedOut(Exception):
    """The run passed its timeout."""


class RunSkipped(Exception):
    """The run was not executed (rate limit, overlap); the message says why."""


@dataclass
class RunContext:
    """What middleware and hooks know about the run being executed."""

    run_id: int
    schedule_id: int | None
    schedule_code: str
    task_name: str
    kwargs: dict
    attempt: int
    max_attempts: int
    retry_delay: float
    max_retry_delay: float
    timeout: float | None
    reason: str
    slot: datetime | None
    # Set by the retry middleware: seconds until the next attempt.
    retry_in: float | None = None


def build_pipeline(innermost: Handler, run: RunContext, factories: Sequence[Middleware]) -> Handler:
    handler = innermost
    for factory in reversed(factories):
        handler = factory(handler, run)
    return handler


def timeout(handler: Handler, run: RunContext) -> Handler:
    """Cancel the run at its timeout; a sync task's thread is left to finish."""
    if not run.timeout:
        return handler

    async def with_timeout(run: RunContext) -> Any:
        try:
            async with asyncio.timeout(run.timeout):
                return await handler(run)
        except TimeoutError:
            raise RunTimedOut(f"timed out after {run.timeout:g}s") from None

    return with_timeout


def retry(handler: Handler, run: RunContext) -> Handler:
    """On failure or timeout, ask for another attempt with exponential backoff."""

    async def with_retry(run: RunContext) -> Any:
        try:
            return await handler(run)
        except RunSkipped:
            raise
        except Exception:
            if run.attempt < run.max_attempts:
                delay = run.retry_delay * 2 ** (run.attempt - 1)
                run.retry_in = min(delay, run.max_retry_delay)
            raise

    return with_retry


def log_run(handler: Handler, run: RunContext) -> Handler:
    async def with_log(run: RunContext) -> Any:
        began = time.monotonic()
        logger.info("run %s %s attempt %s started", run.run_id, run.schedule_code, run.attempt)
        try:
            result = await handler(run)
        except BaseException as exc:
            logger.info(
                "run %s %s ended after %.3fs: %s",
                run.run_id,
                run.schedule_code,
                time.monotonic() - began,
                type(exc).__name__,
            )
            raise
        logger.info(
            "run %s %s succeeded in %.3fs", run.run_id, run.schedule_code, time.monotonic() - began
        )
        return result

    return with_log


def rate_limit(rate: int, per: float = 60.0, *, clock: Callable[[], float] = time.monotonic):
    """A token bucket shared by every run of the task: at most `rate` runs per `per` seconds.

    Runs over the limit are recorded as skipped, with the limit as the reason.
    """
    if rate < 1 or per <= 0:
        raise ValueError("rate_limit needs rate >= 1 and per > 0")
    bucket = {"tokens": float(rate), "at": clock()}

    def factory(handler: Handler, run: RunContext) -> Handler:
        async def limited(run: RunContext) -> Any:
            now = clock()
            refill = (now - bucket["at"]) * rate / per
            bucket["tokens"] = min(float(rate), bucket["tokens"] + refill)
            bucket["at"] = now
            if bucket["tokens"] < 1:
                raise RunSkipped(f"rate limit: at most {rate} runs per {per:g}s")
            bucket["tokens"] -= 1
            return await handler(run)

        return limited

    return factory
