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

from . import instances
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
        """At process exit: say this worker stopped (thread pools are already gone)."""
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
        self.loop.call_soon_threadsafe(self.loop.stop)
        try:
            instances.stop_instance(instance_id=self.scheduler.instance_id, now=timezone.now())
        except Exception as exc:  # at exit the database may be gone; the heartbeat then lapses
            logger.warning("could not mark worker %s stopped: %s", self.scheduler.instance_id, exc)


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
