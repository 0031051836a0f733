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
from functools import partial
from typing import Any

from .. import ratelimit

logger = logging.getLogger("schedules.runs")

Handler = Callable[["RunContext"], Awaitable[Any]]
Middleware = Callable[[Handler, "RunContext"], Handler]


class RunTimedOut(Exception):
    """The run passed its timeout."""


class RunSkipped(Exception):
    """The run was not executed (rate limit, overlap); the message says why."""


class RunDeferred(Exception):
    """The run goes back to the queue for `seconds` (a rate limit in wait mode)."""

    def __init__(self, seconds: float, why: str) -> None:
        super().__init__(why)
        self.seconds = seconds


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
    # The schedule's own rate limit (runs per period, and skip or wait).
    rate_limit: int | None = None
    rate_period: float = 60.0
    rate_mode: str = "skip"
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
        except (RunSkipped, RunDeferred):
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


def rate_limit(
    rate: int,
    per: float = 60.0,
    *,
    mode: str = "skip",
    key: str | None = None,
    clock: Callable[[], float] = time.time,
):
    """A token bucket shared by every run of the task in every process: at most `rate`
    runs per `per` seconds (kept in the database, so N schedulers allow `rate`, not N times).

    Over the limit, `mode="skip"` records the run skipped with the limit as the
    reason; `mode="wait"` puts it back in the queue until a token is free.
    """
    if problem := _bucket_problem(rate, per):
        raise ValueError(f"rate_limit needs {problem}")
    if mode not in ("skip", "wait"):
        raise ValueError("rate_limit mode must be skip or wait")

    def factory(handler: Handler, run: RunContext) -> Handler:
        bucket = key or f"task:{run.task_name}"
        return _limited(handler, bucket, rate=rate, per=per, mode=mode, clock=clock)

    return factory


def schedule_rate_limit(handler: Handler, run: RunContext) -> Handler:
    """The schedule's own limit (`rate_limit` runs per `rate_period`), if it has one."""
    if not run.rate_limit:
        return handler
    if problem := _bucket_problem(run.rate_limit, run.rate_period):
        # A record edited past the checks (forms, API, admin and imports refuse it):
        # each run fails saying so, and the scheduler carries on.
        reason = f"the schedule's rate limit cannot apply: it needs {problem}; fix the schedule"
        return partial(_refuse, reason)
    return _limited(
        handler, f"schedule:{run.schedule_id}", rate=run.rate_limit, per=run.rate_period,
        mode=run.rate_mode, clock=time.time,
    )  # fmt: skip


def _bucket_problem(rate: object, per: object) -> str:
    """Why a token bucket of `rate` runs per `per` seconds cannot work, or ""."""
    whole = isinstance(rate, int) and not isinstance(rate, bool)
    if not whole or rate < 1 or not isinstance(per, int | float) or not per > 0:
        return f"rate >= 1 and per > 0 (got rate {rate!r}, per {per!r})"
    return ""


async def _refuse(reason: str, run: RunContext) -> Any:
    raise ValueError(reason)


def _limited(handler: Handler, bucket: str, *, rate: int, per: float, mode: str, clock):
    async def limited(run: RunContext) -> Any:
        wait = await asyncio.to_thread(ratelimit.take, bucket, rate=rate, per=per, clock=clock)
        if wait:
            if mode == "wait":
                raise RunDeferred(wait, f"rate limit: waiting {wait:.1f}s for a token")
            raise RunSkipped(f"rate limit: at most {rate} runs per {per:g}s")
        return await handler(run)

    return limited
