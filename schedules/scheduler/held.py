"""Held runs: a burst's queued runs, started by this scheduler as workers free up.

A due slot that finds every worker busy is recorded `queued` (the dashboard
counts it as waiting for a worker). The scheduler that claimed it also holds
it, in memory, in start order (priority, then time, catch-ups deferred); whenever half
of its backlog has gone to workers it starts the next held runs in one batch
(one conditional UPDATE; a schedule is read again only if it was edited
meanwhile) and they join the worker pool's line. So a burst of a thousand
slots is read once and started a few dozen runs a batch, with no claim pass
per handful of free workers, and the backlog never runs dry meanwhile.

The row stays an ordinary queued run until then: another scheduler may start
it first, an operator may cancel it, and if this scheduler stops or dies the
others start it; the conditional UPDATE lets exactly one process start it.
At most MAX_HELD runs are held; beyond them, queued runs wait for a claim pass.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..models import CATCH_UP_DEFER, Dispatch, Run, RunReason, RunStatus
from . import claims, queued

if TYPE_CHECKING:
    from .engine import Scheduler

logger = logging.getLogger(__name__)

ZERO = timedelta(0)
# A burst of several claim batches; each held run keeps its Run (and schedule) in memory.
MAX_HELD = 2_000


class HeldRuns:
    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._line: list[tuple[int, datetime, int, Run]] = []  # (-priority, start at, arrival, run)
        self._arrivals = itertools.count()
        self._ids: set[int] = set()
        self._batch: asyncio.Task | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self) -> list[int]:
        return list(self._ids)

    def room(self) -> int:
        return MAX_HELD - len(self._ids)

    def hold(self, run: Run) -> bool:
        """Hold a run its claim left queued for want of a worker; False if it is
        not this scheduler's to start (it then waits for a claim pass)."""
        scheduler = self._scheduler
        if (
            scheduler.executor.pool is None
            or run.status != RunStatus.QUEUED
            or run.dispatch != Dispatch.INLINE
            or run.schedule is None
            or not scheduler.needs_worker(run.task_name)
            or len(self._ids) >= MAX_HELD
        ):
            return False
        # The start order of RunQuerySet.in_start_order: priority, then time, a catch-up
        # counting as queued CATCH_UP_DEFER later; then arrival.
        start_at = run.not_before + (CATCH_UP_DEFER if run.reason == RunReason.CATCH_UP else ZERO)
        rank = (-run.schedule.priority, start_at, next(self._arrivals))
        heapq.heappush(self._line, (*rank, run))
        self._ids.add(run.pk)
        return True

    def refill(self) -> None:
        """Start the next held runs if half the backlog (or every held run) fits."""
        pool = self._scheduler.executor.pool
        if not self._line or pool is None or self._starting():
            return
        scheduler = self._scheduler
        free = scheduler.worker_capacity() - scheduler.launched_in_workers()
        if free >= min(max(1, scheduler.backlog.size() // 2), len(self._line)):
            runs = [heapq.heappop(self._line)[-1] for _ in range(min(free, len(self._line)))]
            self._batch = asyncio.create_task(self._start(runs), name="held-runs")

    def _starting(self) -> bool:
        return self._batch is not None and not self._batch.done()

    async def release_all(self) -> None:
        """At shutdown: held runs stay queued (the next scheduler starts them); a
        batch being started is seen through, so its runs are launched (and stopped
        with the others)."""
        self._line.clear()
        self._ids.clear()
        self._scheduler.recorder.stop_gathering()
        if self._starting():
            await asyncio.wait([self._batch])

    async def _start(self, runs: list[Run]) -> None:
        scheduler = self._scheduler
        try:
            started, replaced = await scheduler.db(
                queued.start_held,
                runs=runs,
                now=scheduler.clock.now(),
                instance_id=scheduler.instance_id,
                tasks=scheduler.tasks,
                local_in_flight=scheduler.local_in_flight(),
                ended=set(scheduler.unrecorded),
            )
        except Exception:
            logger.exception("could not start %d held run(s); a claim pass will", len(runs))
            started, replaced = [], []
            scheduler.queue_changed()
        finally:
            self._ids.difference_update(run.pk for run in runs)
        await scheduler.cancel_local(replaced, claims.REPLACED)
        for run in started:
            if run.status != RunStatus.QUEUED:  # still queued: a catch-up told to wait
                scheduler.launch(run)
            if run.status != RunStatus.RUNNING:
                # Its wait's time, or the follow-ups of a run failed at claim time.
                scheduler.queue_changed()
        self._batch = None  # done: the next batch may start (runs left out freed their room)
        self.refill()
        scheduler.gathering_may_end()  # its runs may all have found a worker
