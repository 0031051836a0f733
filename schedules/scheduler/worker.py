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

from django.utils import timezone

from . import hints, instances
from .engine import Scheduler

logger = logging.getLogger(__name__)


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
        try:
            future = asyncio.run_coroutine_threadsafe(closing, self.loop)
        except RuntimeError as exc:  # the loop is already closed at a late exit: never started
            closing.close()
            logger.debug("run announcements of worker not closed: %s", exc)
        else:
            try:
                future.result(timeout=2.0)
            except Exception as exc:  # a loop blocked past the wait: stop it where it is
                future.cancel()
                logger.debug("run announcements of worker not closed: %s", exc)
        self._end_loop()
        try:
            instances.stop_instance(instance_id=self.scheduler.instance_id, now=timezone.now())
        except Exception as exc:  # at exit the database may be gone; the heartbeat then lapses
            logger.warning("could not mark worker %s stopped: %s", self.scheduler.instance_id, exc)

    def _end_loop(self) -> None:
        """Stop the loop and close it, its background tasks cancelled first. With a run
        still in flight nothing is cancelled (what it waits on would be) and the loop
        is only stopped, as before: its record lapses to `interrupted`."""
        ending = _cancel_background(self.scheduler)
        idle = False
        try:
            idle = asyncio.run_coroutine_threadsafe(ending, self.loop).result(timeout=2.0)
        except RuntimeError:  # the loop is closed already (a late exit)
            ending.close()
            return
        except Exception as exc:  # blocked past the wait: stop it where it is
            logger.debug("background tasks of worker not ended: %s", exc)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=2.0)
        if idle and not self.thread.is_alive():
            self.loop.close()


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
