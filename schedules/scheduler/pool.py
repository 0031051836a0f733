"""The scheduler's worker processes: a pool that grows on demand and stops runs for real.

Each worker is a child process (started from a fork server, Django set up
once) that executes one run at a time. The pool hands a run to an idle
worker or starts one, up to `max_workers`; a run that is cancelled (its
timeout, an operator, `overlap="replace"`, shutdown) has its worker
terminated, killed after a short grace, and replaced on demand. A worker that
dies on its own (os._exit, a signal, the OOM killer) fails only its run.
Workers are recycled after a number of runs or once their peak memory passes
a limit, and idle ones beyond the minimum stop after a while.

Why not a library: pebble, loky and billiard each cover part of this (pebble
terminates a timed-out task's worker and recycles after N tasks), but none
grows and shrinks on demand, recycles by memory and lets an asyncio caller
stop one chosen run; wrapping one would be as long as this module. See
docs/scheduler.md.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import json
import logging
import multiprocessing
import os
import select
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from django.db import connections

from . import child, worker_boot

logger = logging.getLogger(__name__)


STARTUP_TIMEOUT = 60.0  # seconds a new worker may take to set Django up


# Workers a run is sent to before its worker's death is its failure (see _never_read).
DELIVERY_TRIES = 3


class WorkerDied(Exception):
    """The worker process ended while executing the run; the message says how."""


@dataclass(frozen=True)
class PoolLimits:
    min_workers: int = 1
    max_workers: int = 8
    max_runs: int = 1000
    max_memory_mb: float = 1024
    idle_timeout: float = 60.0
    kill_grace: float = 1.0
    # Runs that may wait in the scheduler for a worker (claimed, started as one frees)
    # beyond the busy ones, at most: the scheduler keeps fewer at a slow pace (pace.py).
    backlog: int = 256


@dataclass(eq=False)
class Worker:
    process: BaseProcess
    conn: Connection
    runs: int = 0
    idle_since: float = field(default_factory=time.monotonic)
    retire: bool = False

    @property
    def pid(self) -> int | None:
        return self.process.pid


class WorkerPool:
    def __init__(self, limits: PoolLimits, *, start_method: str = "forkserver") -> None:
        self.limits = limits
        self._context = multiprocessing.get_context(start_method)
        if start_method == "forkserver":
            _prepare_fork_server(self._context)
        self._idle: deque[Worker] = deque()
        self._busy: set[Worker] = set()
        self._starting = 0
        # Runs waiting for a worker, best first: (-priority, arrival, future).
        self._waiters: list[tuple[int, int, asyncio.Future]] = []
        self._arrivals = itertools.count()
        self._spares: set[asyncio.Future] = set()
        self._closed = False

    # ------------------------------------------------------------ state

    @property
    def busy(self) -> int:
        return len(self._busy)

    @property
    def size(self) -> int:
        return len(self._idle) + len(self._busy) + self._starting

    @property
    def waiting(self) -> int:
        """Runs waiting for a worker because every worker is busy."""
        return sum(1 for *_, waiter in self._waiters if not waiter.done())

    def pids(self) -> list[int]:
        return [w.pid for w in [*self._idle, *self._busy] if w.pid is not None]

    def busy_pids(self) -> list[int]:
        """Worker processes executing a run now."""
        return [w.pid for w in self._busy if w.pid is not None]

    # ------------------------------------------------------------ running

    async def start(self) -> None:
        """Start the minimum number of workers, so the first runs wait for none."""
        while self.size < self.limits.min_workers:
            self._starting += 1
            worker = await self._spawn()
            self._starting -= 1
            self._idle.append(worker)

    async def run(
        self,
        task_name: str,
        kwargs: dict,
        *,
        result_limit: int,
        output: Callable[[str], Any] | None = None,
        capture_level: int | None = None,
    ) -> dict:
        """Execute one run in a worker of its own and return its reply."""
        return await self.run_on(
            await self.acquire(), task_name, kwargs, result_limit=result_limit,
            output=output, capture_level=capture_level,
        )  # fmt: skip

    async def run_on(
        self,
        worker: Worker,
        task_name: str,
        kwargs: dict,
        *,
        result_limit: int,
        output: Callable[[str], Any] | None = None,
        capture_level: int | None = None,
    ) -> dict:
        """Execute one run in an acquired worker and return its reply; the worker is
        released (or stopped) afterwards.

        What the run prints and logs (at `capture_level`) goes to `output` as it
        arrives; without `output` the worker captures nothing. Raises WorkerDied
        if the worker ended mid-run. If the caller is cancelled, the worker is
        stopped (terminated, then killed) before the cancellation propagates, so
        the run no longer executes anywhere; what it wrote until then still
        reaches `output`.
        """
        level = False if output is None else capture_level
        request = (task_name, kwargs, result_limit, level)
        tries = DELIVERY_TRIES
        while True:
            taken = False  # whether the worker has read the run (see _never_read)
            try:
                sent = False
                worker.conn.send(request)
                sent = True
                reply = await self._receive(worker)
                taken = True
                while "output" in reply:
                    if output is not None:
                        output(reply["output"])
                    reply = await self._receive(worker)
                break
            except asyncio.CancelledError:
                # Shielded: a second cancellation (shutdown after a timeout) must not
                # leave the worker half stopped.
                await asyncio.shield(self._stop(worker, drain=output))
                raise
            except (EOFError, OSError) as exc:
                await asyncio.shield(self._stop(worker, drain=output))
                tries -= 1
                if taken or not tries or not _never_read(exc, sent=sent):
                    raise WorkerDied(child.exit_description(worker.process.exitcode)) from exc
            worker = await self.acquire()
        worker.runs += 1
        memory = reply.pop("peak_memory_mb", 0)
        limit = self.limits.max_memory_mb
        if worker.runs >= self.limits.max_runs or (limit and memory > limit):
            worker.retire = True
        self.release(worker)
        return reply

    async def acquire(self, priority: int = 0) -> Worker:
        """An idle worker, or a new one (ready: Django set up), waiting while all
        `max_workers` are busy (by priority, then arrival). A run's timeout starts
        after this, with its body."""
        while True:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            while self._idle:
                worker = self._idle.pop()  # the most recently used: warm, and the rest can idle out
                if _alive(worker.process):
                    self._busy.add(worker)
                    self._keep_a_spare()
                    return worker
                self._discard(worker)
            if self.size < self.limits.max_workers:
                self._starting += 1
                starting = asyncio.ensure_future(self._spawn())
                try:
                    worker = await asyncio.shield(starting)
                except asyncio.CancelledError:
                    # Whoever wanted it is gone; the worker becomes a spare.
                    self._spares.add(starting)
                    starting.add_done_callback(self._spare_ready)
                    raise
                self._starting -= 1  # counted until it is placed: the pool never passes its maximum
                self._busy.add(worker)
                self._keep_a_spare()
                return worker
            waiter = asyncio.get_running_loop().create_future()
            entry = (-priority, next(self._arrivals), waiter)
            bisect.insort(self._waiters, entry)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._notify(skip=entry)  # its turn passes to the next in line
                raise
            finally:
                self._waiters.remove(entry)

    def release(self, worker: Worker) -> None:
        """Give an acquired worker back (no-op if its run already gave it back or stopped it)."""
        if worker not in self._busy:
            return
        self._busy.discard(worker)
        if worker.retire or self._closed:
            self._discard(worker, gently=True)
        else:
            worker.idle_since = time.monotonic()
            self._idle.append(worker)
        self._notify()

    def _notify(self, skip: tuple | None = None) -> None:
        for entry in self._waiters:
            if entry is not skip and not entry[2].done():
                entry[2].set_result(None)
                return

    async def _spawn(self) -> Worker:
        """Start a worker and wait until it is ready. The caller has counted it in
        `_starting`, and uncounts it when it places the worker (idle or busy); a
        worker that does not start is uncounted here."""
        try:
            parent, child_end = self._context.Pipe()
            process = self._context.Process(
                target=child.main,
                args=(child_end, _database_settings()),
                name="sillo-worker",
                daemon=True,
            )
            # Starting a process blocks on the fork server: keep the loop free meanwhile.
            await asyncio.get_running_loop().run_in_executor(None, process.start)
            child_end.close()
            worker = Worker(process=process, conn=parent)
            try:
                async with asyncio.timeout(STARTUP_TIMEOUT):
                    hello = await self._receive(worker)
            except (EOFError, OSError, TimeoutError) as exc:
                hello = {"ready": False, "error": child.exit_description(process.exitcode)}
                if isinstance(exc, TimeoutError):
                    hello["error"] = f"no answer within {STARTUP_TIMEOUT:g}s"
            if not hello.get("ready"):
                await asyncio.shield(self._stop(worker))
                raise WorkerDied(f"a worker process could not start: {hello.get('error')}")
        except BaseException:
            self._starting -= 1
            raise
        logger.debug("worker process %s ready", process.pid)
        return worker

    def _keep_a_spare(self) -> None:
        """Start a worker in the background when none is idle, so the next run need not
        wait for one to set up (Django's setup takes a good fraction of a second)."""
        if self._idle or self._starting or self._closed or self.size >= self.limits.max_workers:
            return
        self._starting += 1  # now, not when the task first runs: the next check counts it
        spare = asyncio.ensure_future(self._spawn())
        self._spares.add(spare)
        spare.add_done_callback(self._spare_ready)

    def _spare_ready(self, spare: asyncio.Future) -> None:
        self._spares.discard(spare)
        if spare.cancelled() or spare.exception() is not None:
            if not spare.cancelled():
                logger.error("a spare worker did not start: %s", spare.exception())
            self._notify()  # a run waiting for a worker may start one itself now
            return
        worker = spare.result()
        self._starting -= 1
        if self._closed:
            self._discard(worker, gently=True)
            return
        worker.idle_since = time.monotonic()
        self._idle.append(worker)
        self._notify()

    async def _receive(self, worker: Worker) -> dict:
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        fd = worker.conn.fileno()
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            loop.remove_reader(fd)
        return worker.conn.recv()

    # ------------------------------------------------------------ stopping

    async def _stop(self, worker: Worker, *, drain: Callable[[str], Any] | None = None) -> None:
        """Terminate a worker, kill it after the grace, and wait until it is gone.

        `drain` receives the output the worker shipped before it died and that
        is still in the pipe (a run stopped at its timeout keeps its last lines).
        """
        self._busy.discard(worker)
        process = worker.process
        if process.is_alive():
            _signal_group(process, signal.SIGTERM)
            deadline = time.monotonic() + self.limits.kill_grace
            while process.is_alive() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            if process.is_alive():
                logger.warning("worker %s ignored SIGTERM; killing it", process.pid)
                _signal_group(process, signal.SIGKILL)
            while process.is_alive():
                await asyncio.sleep(0.01)
        # Whatever the run started and left in the worker's group (it outlives the worker).
        _signal_group(process, signal.SIGKILL)
        if drain is not None:
            _drain(worker.conn, drain)
        self._discard(worker)
        self._notify()

    def _discard(self, worker: Worker, *, gently: bool = False) -> None:
        if gently and worker.process.is_alive():
            try:
                worker.conn.send(None)  # finish and exit
            except OSError:
                worker.process.terminate()
        worker.conn.close()
        worker.process.join(timeout=0)

    def trim(self) -> int:
        """Stop idle workers beyond the minimum that have idled past the timeout."""
        multiprocessing.active_children()  # reaps workers that exited
        now = time.monotonic()
        stopped = 0
        while len(self._idle) + len(self._busy) > self.limits.min_workers and self._idle:
            oldest = self._idle[0]
            if now - oldest.idle_since < self.limits.idle_timeout:
                break
            self._idle.popleft()
            self._discard(oldest, gently=True)
            stopped += 1
        return stopped

    async def close(self) -> None:
        """Stop every worker: idle ones are asked to exit, busy ones are stopped."""
        self._closed = True
        for spare in list(self._spares):
            spare.cancel()
        for *_, waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        for worker in list(self._busy):
            await self._stop(worker)
        while self._idle:
            worker = self._idle.popleft()
            self._discard(worker, gently=True)
            worker.process.join(timeout=self.limits.kill_grace)
            if worker.process.is_alive():
                worker.process.kill()


def _signal_group(process: BaseProcess, sig: int) -> None:
    """Signal a stopped run's worker and every process its task started: the worker
    leads a group of its own (child.main). A worker that could not make one, or one
    already reaped, is signalled alone, if at all: never the fork server's group."""
    if process.pid is None:
        return
    try:
        os.killpg(process.pid, sig)  # the group whose id is the worker's pid: its own
    except ProcessLookupError:  # no such group: the worker alone, if it still runs
        if process.exitcode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, sig)
    except PermissionError:
        pass


def _drain(conn: Connection, output: Callable[[str], Any]) -> None:
    """Hand over the output messages left in a dead worker's pipe."""
    try:
        while conn.poll():
            message = conn.recv()
            if isinstance(message, dict) and "output" in message:
                output(message["output"])
    except (EOFError, OSError, ValueError):
        pass  # the end of the pipe, or a message cut by the kill: nothing more to read


def _prepare_fork_server(context: Any) -> None:
    """Have the fork server set Django up once, with this process's databases, so a
    new worker is a fork of a ready one (a few milliseconds instead of half a second).

    The fork server starts with the first worker and reads this then; workers
    check their own setup and do it themselves if the server could not.
    """
    context.set_forkserver_preload(["schedules.scheduler.worker_boot"])
    # The server inherits the environment it starts with; nothing else must (a child
    # process this one starts, e.g. another scheduler, has databases of its own).
    os.environ[worker_boot.DATABASES_ENV] = json.dumps(_database_settings(), default=str)
    try:
        forkserver.ensure_running()
    finally:
        os.environ.pop(worker_boot.DATABASES_ENV, None)


def _database_settings() -> dict[str, Any]:
    """The databases as this process uses them, for the worker to use the same ones."""
    return {alias: dict(connections.settings[alias]) for alias in connections.settings}


def _never_read(error: BaseException, *, sent: bool) -> bool:
    """Whether a worker's end, seen as `error`, came before it read the run sent to it.

    A worker killed while idle (the OOM killer, kill -9) looks alive until the fork
    server reports its death, and its socket stays open until its last thread has
    exited. A run sent meanwhile either fails to send, or is left unread when the
    socket closes, which the kernel reports to us as a reset rather than an end.
    Either way the run never began there, so it goes to another worker. An end
    (EOF) after the send means the worker read it: the run may have begun.
    """
    return not sent or isinstance(error, ConnectionResetError)


def _alive(process: BaseProcess) -> bool:
    """Whether a started worker still runs: its sentinel turns readable when it ends.

    Asked before every run; `is_alive()` builds a selector each time, which cost a
    fifth of the scheduler's time per run in a burst.
    """
    try:
        ready = select.poll()  # poll, not select: any file descriptor number
        ready.register(process.sentinel, select.POLLIN)
        return not ready.poll(0)
    except (OSError, ValueError):  # the sentinel is closed: the process was reaped
        return False
