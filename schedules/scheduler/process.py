"""The runscheduler process: the tick loop and the Channels worker on one event loop.

With `serve`, daphne serves the ASGI app from the same process and loop (the
embedded default: one process, SQLite, in-memory channel layer).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from channels.routing import get_default_application

from .alerting import Alerting
from .engine import Scheduler
from .executor import TASK_THREAD_PREFIX
from .hints import listen_for_hints

logger = logging.getLogger(__name__)


async def run_scheduler(*, on_stopped: Callable[[], None] | None = None) -> None:
    """Run until SIGINT or SIGTERM, then shut down gracefully."""
    # Django and the apps, imported by now, live as long as the process: out of the
    # collector's sight, the oldest generation's collections no longer walk them (each
    # walk held the loop for 70 to 90 ms, a stall of every slot due meanwhile).
    gc.freeze()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    scheduler = Scheduler()
    listener = asyncio.create_task(listen_for_hints(stop))
    # Incident sweeps and notification delivery: their own task, threads and timeouts.
    alerting = asyncio.create_task(Alerting(instance_id=scheduler.instance_id).run_forever(stop))
    try:
        await scheduler.run_forever(stop)
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        stop.set()  # also when the loop ended with an error: alerting stops with it
        await asyncio.gather(alerting, return_exceptions=True)
        if on_stopped:
            on_stopped()


async def run_once() -> int:
    """One pass, then wait for the runs it started. Returns how many it started."""
    scheduler = Scheduler()
    await scheduler.start()
    try:
        # Counted as launched: a quick run can end before the pass does (its last
        # reads await the database), and in_flight no longer holds it.
        await scheduler.run_pass()
        started = scheduler.launched
        await scheduler.wait_idle()
    finally:
        await scheduler.shutdown()
    return started


# Seconds a run the CLI starts itself is left to it by every scheduler: after them,
# a CLI that died before starting it has its run started by a scheduler instead.
INLINE_RESERVE = 60.0


async def run_inline(run_id: int) -> None:
    """Execute one queued run in this process (the CLI's `run --inline`), queued with
    `reserve=INLINE_RESERVE`."""
    scheduler = Scheduler()
    await scheduler.start()
    try:
        await scheduler.run_queued(run_id, reserved=True)
    finally:
        await scheduler.shutdown()


def serve_and_schedule(host: str, port: int, application: Any = None) -> None:
    """daphne and the scheduler in one process, on daphne's asyncio reactor.

    `application` defaults to the project's ASGI_APPLICATION.
    """
    # Deferred: importing daphne's server installs Twisted's asyncio reactor, which
    # only the serving process wants.
    from daphne.endpoints import build_endpoint_description_strings
    from daphne.server import Server
    from twisted.internet import reactor  # the reactor daphne installed

    server = Server(
        application=application or get_default_application(),
        endpoints=build_endpoint_description_strings(host=host, port=port),
        signal_handlers=False,
    )

    def start() -> None:
        task = asyncio.ensure_future(run_scheduler(on_stopped=server.stop))
        task.add_done_callback(_log_crash)

    reactor.callWhenRunning(start)
    logger.info("serving on http://%s:%s/", host, port)
    server.run()


def leave_task_threads(*, code: int = 0, last_words: str = "") -> None:
    """End the process now, with exit status `code` (after `last_words` on stderr), if
    an inline sync task's thread still runs.

    Called once the scheduler has stopped: its runs are recorded (a timed-out one
    `timed_out`, the others `cancelled`) and its instance marked stopped. The
    interpreter's exit would join that thread (concurrent.futures does), so the
    process would live on, stopped, until the task returned: minutes, or never.
    """
    running = [
        thread
        for thread in threading.enumerate()
        if thread.name.startswith(TASK_THREAD_PREFIX) and not _ends_soon(thread)
    ]
    if not running:
        return
    logger.warning(
        "exiting with %d inline task thread(s) still executing (a thread cannot be "
        "stopped; its run is recorded already)",
        len(running),
    )
    logging.shutdown()
    if last_words:
        sys.stderr.write(last_words + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _ends_soon(thread: threading.Thread) -> bool:
    thread.join(timeout=0.2)  # an idle pool thread is on its way out
    return not thread.is_alive()


def _log_crash(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("scheduler stopped with an error", exc_info=task.exception())
