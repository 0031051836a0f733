"""The worker side of `dispatch="enqueue"`: one scheduler instance per worker process.

A django.tasks worker (for the database backend: `manage.py db_worker`) calls
`execute_run(run_id)` once per enqueued run; the runtime claims the run,
executes it through the same pipeline and records its outcome.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import socket
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from django.utils import timezone

from . import hints, instances
from .engine import Scheduler

logger = logging.getLogger(__name__)

EXIT_WAIT = 2.0  # seconds each step of a worker's exit may take on its loop
T = TypeVar("T")


class WorkerRuntime:
    """One scheduler instance per worker process, on its own event loop thread.

    A worker process (e.g. `db_worker`) calls `execute` once per enqueued run;
    the instance, its thread pools and its heartbeat live as long as the
    process, so a run costs its own work only, and a killed worker's runs
    become `interrupted` once its heartbeat goes stale.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="sillo-worker", daemon=True
        )
        self.thread.start()
        instance_id = f"worker-{socket.gethostname()}-{os.getpid()}"[:64]
        self.scheduler = Scheduler(instance_id=instance_id, kind="worker")
        self._call(self.scheduler.start())
        self.beat = asyncio.run_coroutine_threadsafe(self.scheduler.heartbeat_forever(), self.loop)

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def execute(self, run_id: int) -> str:
        self._call(self.scheduler.run_queued(run_id, dispatch_kind="enqueue"))
        return f"run {run_id} done"

    def close(self) -> None:
        """At process exit: say this worker stopped (thread pools are already gone).

        Its loop ends with it, background tasks first: a stopped loop left open with
        tasks pending is ended by the garbage collector whenever it runs, on whichever
        thread, closing those tasks' coroutines there (a test process goes on running
        other event loops meanwhile).
        """
        hints.unregister(self.scheduler)
        self.beat.cancel()
        closing = self.scheduler.announcer.close(timeout=1.0)  # the line's task ends with it
        self._await_on_loop(closing, "run announcements of worker not closed")
        self._end_loop()
        try:
            instances.stop_instance(instance_id=self.scheduler.instance_id, now=timezone.now())
        except Exception as exc:  # at exit the database may be gone; the heartbeat then lapses
            logger.warning("could not mark worker %s stopped: %s", self.scheduler.instance_id, exc)

    def _end_loop(self) -> None:
        """Stop the loop and close it, its background tasks cancelled first. With a run
        still in flight nothing is cancelled (what it waits on would be) and the loop
        is only stopped, as before: its record lapses to `interrupted`."""
        if self.loop.is_closed():  # a late exit
            return
        ending = _cancel_background(self.scheduler)
        idle = self._await_on_loop(ending, "background tasks of worker not ended")
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=EXIT_WAIT)
        if idle and not self.thread.is_alive():
            self.loop.close()

    def _await_on_loop(self, coroutine: Coroutine[Any, Any, T], what: str) -> T | None:
        """At exit: `coroutine`'s result on the loop, or None (with `what` logged) if the
        loop is closed already, or blocked past EXIT_WAIT (the coroutine is then cancelled
        where it is)."""
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        except RuntimeError as exc:  # the loop is closed: it never ran
            coroutine.close()
            logger.debug("%s: %s", what, exc)
            return None
        try:
            return future.result(timeout=EXIT_WAIT)
        except Exception as exc:
            future.cancel()
            logger.debug("%s: %s", what, exc)
            return None


async def _cancel_background(scheduler: Scheduler) -> bool:
    """Unless a run is in flight, cancel the loop's other tasks (the heartbeat, the
    recorder's, the pruner's) and wait up to 1 s for them; whether it did."""
    if scheduler.in_flight:
        return False
    tasks = asyncio.all_tasks() - {asyncio.current_task()}
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=1.0)
    return True


_runtime: WorkerRuntime | None = None


def worker_runtime() -> WorkerRuntime:
    global _runtime
    if _runtime is None:
        _runtime = WorkerRuntime()
        atexit.register(close_worker_runtime)
    return _runtime


def close_worker_runtime() -> None:
    global _runtime
    if _runtime is not None:
        _runtime.close()
        _runtime = None
