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
import logging
import multiprocessing
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from django.db import connections

from . import child

logger = logging.getLogger(__name__)


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
        self._idle: deque[Worker] = deque()
        self._busy: set[Worker] = set()
        self._starting = 0
        self._waiters: deque[asyncio.Future] = deque()
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
        return sum(1 for waiter in self._waiters if not waiter.done())

    def free_capacity(self) -> int:
        return max(0, self.limits.max_workers - len(self._busy) - self.waiting)

    def pids(self) -> list[int]:
        return [w.pid for w in [*self._idle, *self._busy] if w.pid is not None]

    # ------------------------------------------------------------ running

    async def start(self) -> None:
        """Start the minimum number of workers, so the first runs wait for none."""
        while self.size < self.limits.min_workers:
            self._idle.append(await self._spawn())

    async def run(self, task_name: str, kwargs: dict, *, result_limit: int) -> dict:
        """Execute one run in a worker and return its reply.

        Raises WorkerDied if the worker ended mid-run. If the caller is
        cancelled, the worker is stopped (terminated, then killed) before the
        cancellation propagates, so the run no longer executes anywhere.
        """
        worker = await self._acquire()
        try:
            worker.conn.send((task_name, kwargs, result_limit))
            reply = await self._receive(worker)
        except asyncio.CancelledError:
            # Shielded: a second cancellation (shutdown after a timeout) must not
            # leave the worker half stopped.
            await asyncio.shield(self._stop(worker))
            raise
        except (EOFError, OSError) as exc:
            await asyncio.shield(self._stop(worker))
            raise WorkerDied(child.exit_description(worker.process.exitcode)) from exc
        worker.runs += 1
        memory = reply.pop("peak_memory_mb", 0)
        limit = self.limits.max_memory_mb
        if worker.runs >= self.limits.max_runs or (limit and memory > limit):
            worker.retire = True
        self._release(worker)
        return reply

    async def _acquire(self) -> Worker:
        while True:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            while self._idle:
                worker = self._idle.pop()  # the most recently used: warm, and the rest can idle out
                if worker.process.is_alive():
                    self._busy.add(worker)
                    return worker
                self._discard(worker)
            if self.size < self.limits.max_workers:
                worker = await self._spawn()
                self._busy.add(worker)
                return worker
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _release(self, worker: Worker) -> None:
        self._busy.discard(worker)
        if worker.retire or self._closed:
            self._discard(worker, gently=True)
        else:
            worker.idle_since = time.monotonic()
            self._idle.append(worker)
        self._notify()

    def _notify(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
                return

    async def _spawn(self) -> Worker:
        self._starting += 1
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
        finally:
            self._starting -= 1
        logger.debug("worker process %s started", process.pid)
        return Worker(process=process, conn=parent)

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

    async def _stop(self, worker: Worker) -> None:
        """Terminate a worker, kill it after the grace, and wait until it is gone."""
        self._busy.discard(worker)
        process = worker.process
        if process.is_alive():
            process.terminate()
            deadline = time.monotonic() + self.limits.kill_grace
            while process.is_alive() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            if process.is_alive():
                logger.warning("worker %s ignored SIGTERM; killing it", process.pid)
                process.kill()
            while process.is_alive():
                await asyncio.sleep(0.01)
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
        for waiter in self._waiters:
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


def _database_settings() -> dict[str, Any]:
    """The databases as this process uses them, for the worker to use the same ones."""
    return {alias: dict(connections.settings[alias]) for alias in connections.settings}
