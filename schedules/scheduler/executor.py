"""Executing one run: the task function through the middleware pipeline.

Async tasks run on the event loop, sync tasks in a bounded thread pool. The
outcome (succeeded, failed, timed out, skipped, cancelled) is classified here;
recording it is the caller's business.
"""

from __future__ import annotations

import asyncio
import json
import threading
import traceback as tb
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import close_old_connections
from django.utils.module_loading import import_string

from ..conf import setting
from ..models import Run, RunStatus, Schedule
from ..registry import TaskDeclaration
from .pipeline import Middleware, RunContext, RunSkipped, RunTimedOut, build_pipeline


@dataclass
class Outcome:
    status: str
    error: str = ""
    traceback: str = ""
    result: Any = None
    retry_in: float | None = None


def global_middleware() -> list[Middleware]:
    return [import_string(path) for path in setting("SILLO_MIDDLEWARE")]


def context_for(run: Run, schedule: Schedule) -> RunContext:
    return RunContext(
        run_id=run.pk,
        schedule_id=run.schedule_id,
        schedule_code=run.schedule_code,
        task_name=run.task_name,
        kwargs=run.kwargs,
        attempt=run.attempt,
        max_attempts=schedule.max_attempts,
        retry_delay=schedule.retry_delay,
        max_retry_delay=setting("SILLO_MAX_RETRY_DELAY"),
        timeout=schedule.timeout,
        reason=run.reason,
        slot=run.slot,
    )


def _call_sync(func: Callable[..., Any], kwargs: dict) -> Any:
    try:
        return func(**kwargs)
    finally:
        # The task may have used the ORM in this pool thread.
        close_old_connections()


class Executor:
    """Runs tasks; knows the thread pool and which sync threads outlived a timeout."""

    def __init__(self, *, sync_workers: int, middleware: list[Middleware] | None = None) -> None:
        self.pool = ThreadPoolExecutor(max_workers=sync_workers, thread_name_prefix="sillo-task")
        self.middleware = global_middleware() if middleware is None else middleware
        # schedule id -> sync threads still running after their run timed out
        self.lingering: dict[int, int] = {}
        self._lock = threading.Lock()  # pool threads release, the loop counts

    async def execute(self, declaration: TaskDeclaration, context: RunContext) -> Outcome:
        handler = build_pipeline(
            self._innermost(declaration), context, [*self.middleware, *declaration.middleware]
        )
        try:
            result = await handler(context)
        except RunTimedOut as exc:
            return Outcome(RunStatus.TIMED_OUT, str(exc), retry_in=context.retry_in)
        except RunSkipped as exc:
            return Outcome(RunStatus.SKIPPED, str(exc))
        except Exception as exc:
            return Outcome(
                RunStatus.FAILED,
                f"{type(exc).__name__}: {exc}",
                tb.format_exc(),
                retry_in=context.retry_in,
            )
        return Outcome(RunStatus.SUCCEEDED, result=_jsonable(result))

    def _innermost(self, declaration: TaskDeclaration):
        func = declaration.func
        if declaration.is_async:

            async def call_async(run: RunContext) -> Any:
                return await func(**run.kwargs)

            return call_async

        async def call_sync(run: RunContext) -> Any:
            future = self.pool.submit(_call_sync, func, run.kwargs)
            try:
                return await asyncio.wrap_future(future)
            except asyncio.CancelledError:
                if not future.done() and run.schedule_id is not None:
                    self._linger(run.schedule_id, future)
                raise

        return call_sync

    def _linger(self, schedule_id: int, future: Future) -> None:
        """A timed-out sync thread keeps its slot occupied until it returns."""
        with self._lock:
            self.lingering[schedule_id] = self.lingering.get(schedule_id, 0) + 1
        future.add_done_callback(partial(self._release, schedule_id))

    def _release(self, schedule_id: int, _future: Future) -> None:
        with self._lock:
            left = self.lingering.get(schedule_id, 1) - 1
            if left > 0:
                self.lingering[schedule_id] = left
            else:
                self.lingering.pop(schedule_id, None)

    def lingering_counts(self) -> dict[int, int]:
        with self._lock:
            return dict(self.lingering)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def _jsonable(result: Any) -> Any:
    """The result as JSON, truncated to SILLO_RESULT_MAX_CHARS; repr() if not JSON."""
    limit = setting("SILLO_RESULT_MAX_CHARS")
    try:
        text = json.dumps(result)
    except (TypeError, ValueError):
        text = json.dumps(repr(result))
        result = repr(result)
    if len(text) > limit:
        return {"truncated": True, "preview": text[:limit]}
    return result
