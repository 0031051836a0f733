"""Executing one run: the task function through the run pipeline, in a worker or inline.

The pipeline (timeout, retry, logging, a task's own middleware) runs here in
the scheduler; the task body runs in a worker process (`isolation="process"`,
the default) or, for tasks declared `isolation="inline"`, in this process:
async bodies on the event loop, sync bodies in a thread pool. The outcome
(succeeded, failed, timed out, skipped, cancelled) is classified here;
recording it is the caller's business.
"""

from __future__ import annotations

import asyncio
import threading
import traceback as tb
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from django.db import close_old_connections
from django.utils.module_loading import import_string

from ..conf import setting
from ..models import Run, RunStatus, Schedule
from ..registry import TaskDeclaration
from .capture import OutputBuffer, capturing, level_number
from .child import describe_exception, jsonable
from .pipeline import (
    Middleware,
    RunContext,
    RunDeferred,
    RunSkipped,
    RunTimedOut,
    build_pipeline,
    schedule_rate_limit,
)
from .pool import PoolLimits, Worker, WorkerDied, WorkerPool


@dataclass
class Outcome:
    status: str
    error: str = ""
    traceback: str = ""
    result: Any = None
    retry_in: float | None = None
    # What the run printed and logged, capped (None: nothing captured).
    output: OutputBuffer | None = None
    # When the body ended: its `finished_at`, however long the record then waits to be
    # written (gathered into a batch, or a database that refuses it for a while).
    ended_at: datetime | None = None


# The threads of inline sync tasks: nothing can stop one (process.leave_task_threads).
TASK_THREAD_PREFIX = "sillo-task"

# Why runs are stopped at shutdown (the cancellation's message); one that has not begun
# goes back to the queue.
SHUT_DOWN = "scheduler shut down"


class NotStarted(Exception):
    """The run was stopped while it waited for a worker: its body never began.
    The argument is why it was stopped (the cancellation's message, or SHUT_DOWN)."""


class TaskFailed(Exception):
    """The task body failed (in a worker, or inline with a BaseException): error and traceback."""

    def __init__(self, error: str, traceback: str = "") -> None:
        super().__init__(error)
        self.error = error
        self.traceback = traceback


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
        timeout=schedule.effective_timeout,
        reason=run.reason,
        slot=run.slot,
        rate_limit=schedule.rate_limit,
        rate_period=schedule.rate_period,
        rate_mode=schedule.rate_mode,
    )


def _call_sync(
    func: Callable[..., Any], kwargs: dict, output: OutputBuffer | None, level: int | None
) -> Any:
    try:
        with capturing(output, level):
            return func(**kwargs)
    except Exception:
        raise
    except BaseException as exc:  # SystemExit in a thread would surface in the loop
        raise TaskFailed(describe_exception(exc), tb.format_exc()) from None
    finally:
        # The task may have used the ORM in this pool thread.
        close_old_connections()


class Executor:
    """Runs tasks: worker processes by default, inline for tasks that ask for it.

    Without a pool every task runs inline (the scheduler's unit tests do so).
    """

    def __init__(
        self,
        *,
        pool: WorkerPool | None,
        sync_workers: int,
        middleware: list[Middleware] | None = None,
    ) -> None:
        self.pool = pool
        self.threads = ThreadPoolExecutor(
            max_workers=sync_workers, thread_name_prefix=TASK_THREAD_PREFIX
        )
        self.middleware = global_middleware() if middleware is None else middleware
        # schedule id -> inline sync threads still running after their run timed out
        self.lingering: dict[int, int] = {}
        # The tasks of runs waiting for a worker (their bodies have not begun).
        self.waiting_for_worker: set[asyncio.Task] = set()
        # Called as a run takes a worker: the scheduler's outcomes may stop gathering.
        self.worker_taken: Callable[[], None] = lambda: None
        self.closing = False  # shutting down: no run begins in a worker any more
        self._lock = threading.Lock()  # pool threads release, the loop counts

    def in_worker(self, declaration: TaskDeclaration | None) -> bool:
        return self.pool is not None and (declaration is None or declaration.isolation == "process")

    async def execute(
        self,
        declaration: TaskDeclaration,
        context: RunContext,
        output: OutputBuffer | None = None,
        *,
        priority: int = 0,
    ) -> Outcome:
        """Run the pipeline and classify its outcome; what the task prints and logs
        goes to `output` (which the outcome carries). A run waiting for a worker
        waits by `priority`, then arrival."""
        # The worker is acquired before the pipeline, so a run's timeout counts its body,
        # not the wait for a worker to start.
        worker: Worker | WorkerDied | None = None
        if self.in_worker(declaration):
            if self.closing:
                raise NotStarted(SHUT_DOWN)
            waiting = asyncio.current_task()
            self.waiting_for_worker.add(waiting)
            try:
                worker = await self.pool.acquire(priority)
            except WorkerDied as exc:
                worker = exc  # the run fails inside the pipeline, so retries apply
            except asyncio.CancelledError as exc:
                waiting.uncancel()  # handled here: the task goes on to record the run
                raise NotStarted(*exc.args) from None
            finally:
                self.waiting_for_worker.discard(waiting)
            if self.closing and isinstance(worker, Worker):  # a worker freed in the grace
                self.pool.release(worker)
                raise NotStarted(SHUT_DOWN)
            self.worker_taken()
        handler = build_pipeline(
            self._innermost(declaration, worker, output),
            context,
            [*self.middleware, *declaration.middleware, schedule_rate_limit],
        )
        try:
            outcome = await self._outcome(handler, context)
            outcome.output = output
            return outcome
        finally:
            if isinstance(worker, Worker):
                self.pool.release(worker)  # a run the pipeline skipped never used it

    async def _outcome(self, handler, context: RunContext) -> Outcome:
        try:
            result = await handler(context)
        except RunTimedOut as exc:
            return Outcome(RunStatus.TIMED_OUT, str(exc), retry_in=context.retry_in)
        except RunSkipped as exc:
            return Outcome(RunStatus.SKIPPED, str(exc))
        except RunDeferred as exc:  # back to the queue: `retry_in` says when
            return Outcome(RunStatus.QUEUED, str(exc), retry_in=exc.seconds)
        except TaskFailed as exc:
            return Outcome(RunStatus.FAILED, exc.error, exc.traceback, retry_in=context.retry_in)
        except Exception as exc:
            error = describe_exception(exc)
            return Outcome(RunStatus.FAILED, error, tb.format_exc(), retry_in=context.retry_in)
        return Outcome(RunStatus.SUCCEEDED, result=jsonable(result, _result_limit()))

    def _innermost(
        self,
        declaration: TaskDeclaration,
        worker: Worker | WorkerDied | None,
        output: OutputBuffer | None,
    ):
        level = capture_level()
        if worker is not None:
            return partial(self._call_in_worker, declaration.name, worker, output, level)
        func = declaration.func
        if declaration.is_async:

            async def call_async(run: RunContext) -> Any:
                try:
                    with capturing(output, level):
                        return await func(**run.kwargs)
                except (Exception, asyncio.CancelledError):
                    raise
                except BaseException as exc:  # SystemExit must not end the scheduler
                    raise TaskFailed(describe_exception(exc), tb.format_exc()) from None

            return call_async

        async def call_sync(run: RunContext) -> Any:
            future = self.threads.submit(_call_sync, func, run.kwargs, output, level)
            try:
                return await asyncio.wrap_future(future)
            except asyncio.CancelledError:
                if not future.done() and run.schedule_id is not None:
                    self._linger(run.schedule_id, future)
                raise

        return call_sync

    async def _call_in_worker(
        self,
        task_name: str,
        worker: Worker | WorkerDied,
        output: OutputBuffer | None,
        level: int | None,
        run: RunContext,
    ) -> Any:
        if isinstance(worker, WorkerDied):
            raise TaskFailed(str(worker))
        try:
            reply = await self.pool.run_on(
                worker, task_name, run.kwargs, result_limit=_result_limit(),
                output=output.write if output is not None else None, capture_level=level,
            )  # fmt: skip
        except WorkerDied as exc:
            raise TaskFailed(str(exc)) from None
        if not reply["ok"]:
            raise TaskFailed(reply["error"], reply["traceback"])
        return reply["result"]

    def _linger(self, schedule_id: int, future: Future) -> None:
        """A timed-out inline sync thread keeps its slot occupied until it returns."""
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

    async def start(self) -> None:
        if self.pool is not None:
            await self.pool.start()

    def stop_starting(self) -> None:
        """No run begins in a worker from now on: those waiting for one, and any that
        arrive, end NotStarted(SHUT_DOWN); runs executing go on."""
        self.closing = True
        for waiting in list(self.waiting_for_worker):
            waiting.cancel(SHUT_DOWN)

    async def shutdown(self) -> None:
        self.threads.shutdown(wait=False, cancel_futures=True)
        if self.pool is not None:
            await self.pool.close()


def _result_limit() -> int:
    return setting("SILLO_RESULT_MAX_CHARS")


def capture_level() -> int | None:
    """The level from which a run's log records are captured (SILLO_OUTPUT_LEVEL)."""
    return level_number(setting("SILLO_OUTPUT_LEVEL"))


def new_output() -> OutputBuffer | None:
    """A run's output buffer, capped at SILLO_OUTPUT_MAX_CHARS (0: capture nothing)."""
    limit = setting("SILLO_OUTPUT_MAX_CHARS")
    return OutputBuffer(limit) if limit else None


def default_pool() -> WorkerPool:
    """A pool with the limits from settings."""
    return WorkerPool(
        PoolLimits(
            min_workers=setting("SILLO_MIN_WORKERS"),
            max_workers=setting("SILLO_MAX_WORKERS"),
            max_runs=setting("SILLO_WORKER_MAX_RUNS"),
            max_memory_mb=setting("SILLO_WORKER_MAX_MEMORY_MB"),
            idle_timeout=setting("SILLO_WORKER_IDLE_TIMEOUT"),
            kill_grace=setting("SILLO_KILL_GRACE"),
            backlog=setting("SILLO_WORKER_BACKLOG"),
        )
    )
