"""The runscheduler process: the tick loop and the Channels worker on one event loop.

With `serve`, daphne serves the ASGI app from the same process and loop (the
embedded default: one process, SQLite, in-memory channel layer).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable

from channels.layers import get_channel_layer
from channels.routing import get_default_application
from channels.worker import Worker

from ..services import SCHEDULER_CHANNEL
from .engine import MAX_BACKOFF, Scheduler

logger = logging.getLogger(__name__)


async def listen_for_hints(stop: asyncio.Event) -> None:
    """The Channels background worker on `scheduler`; restarts if the layer fails."""
    layer = get_channel_layer()
    if layer is None:
        logger.warning("no channel layer: wake hints are off, resync interval applies")
        return
    backoff = 1.0
    while not stop.is_set():
        worker = Worker(get_default_application(), [SCHEDULER_CHANNEL], layer)
        try:
            await worker.handle()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.warning("channel layer failed (%s); listening again in %.0fs", exc, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)


async def run_scheduler(*, on_stopped: Callable[[], None] | None = None) -> None:
    """Run until SIGINT or SIGTERM, then shut down gracefully."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    scheduler = Scheduler()
    listener = asyncio.create_task(listen_for_hints(stop))
    try:
        await scheduler.run_forever(stop)
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        if on_stopped:
            on_stopped()


async def run_once() -> int:
    """One pass, then wait for the runs it started. Returns how many it started."""
    scheduler = Scheduler()
    await scheduler.start()
    try:
        await scheduler.run_pass()
        started = len(scheduler.in_flight)
        await scheduler.wait_idle()
    finally:
        await scheduler.shutdown()
    return started


async def run_inline(run_id: int) -> None:
    """Execute one queued run in this process (the CLI's `run --inline`)."""
    scheduler = Scheduler()
    await scheduler.start()
    try:
        await scheduler.run_queued(run_id)
    finally:
        await scheduler.shutdown()


class WorkerRuntime:
    """One scheduler instance per worker process, on its own event loop thread.

    A worker process (e.g. `db_worker`) calls `execute` once per enqueued run;
    the instance, its thread pools and its heartbeat live as long as the
    process, so a run costs its own work only, and a killed worker's runs
    become `interrupted` once its heartbeat goes stale.
    """

    def __init__(self) -> None:
        import os
        import socket
        import threading

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
        from django.utils import timezone

        from . import store

        self.beat.cancel()
        self.loop.call_soon_threadsafe(self.loop.stop)
        try:
            store.stop_instance(instance_id=self.scheduler.instance_id, now=timezone.now())
        except Exception as exc:  # at exit the database may be gone; the heartbeat then lapses
            logger.warning("could not mark worker %s stopped: %s", self.scheduler.instance_id, exc)


_runtime: WorkerRuntime | None = None


def worker_runtime() -> WorkerRuntime:
    global _runtime
    if _runtime is None:
        import atexit

        _runtime = WorkerRuntime()
        atexit.register(close_worker_runtime)
    return _runtime


def close_worker_runtime() -> None:
    global _runtime
    if _runtime is not None:
        _runtime.close()
        _runtime = None


def serve_and_schedule(host: str, port: int) -> None:
    """daphne and the scheduler in one process, on daphne's asyncio reactor."""
    from daphne.endpoints import build_endpoint_description_strings
    from daphne.server import Server  # installs the asyncio reactor
    from twisted.internet import reactor

    server = Server(
        application=get_default_application(),
        endpoints=build_endpoint_description_strings(host=host, port=port),
        signal_handlers=False,
    )

    def start() -> None:
        task = asyncio.ensure_future(run_scheduler(on_stopped=server.stop))
        task.add_done_callback(_log_crash)

    reactor.callWhenRunning(start)
    logger.info("serving on http://%s:%s/", host, port)
    server.run()


def _log_crash(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("scheduler stopped with an error", exc_info=task.exception())
