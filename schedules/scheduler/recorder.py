"""Writing outcomes in batches: while one batch is written, the next gathers.

Each finished run waits for its own outcome to be written; a database
hiccup is retried after a pause on the scheduler's clock. While runs wait
for a worker (held by the scheduler, held.py, or launched and in the worker
pool's line), outcomes gather for GATHER seconds (or until no run waits):
starting the waiting runs comes first on the scheduler's one database thread
and its event loop, and a burst's outcomes are written once it has started,
in one large batch instead of many small ones.
Under a steady load, writes are spaced SPACING apart: a write of one outcome
costs the database thread about as much as a write of five (a transaction and
its fixed queries), so an outcome that ends within SPACING of the last write
waits for the next one while other runs are in flight to share it. With none
(a django.tasks worker's one run, the link of a chain that ran alone) there is
nothing to share and it is written at once.
A run's `finished_at` is when its body ended, not when its outcome was
written; until then it still reads `running` to other processes (what that
allows is in docs/scheduler.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from django.db import DataError, IntegrityError, ProgrammingError

from ..models import Run, RunStatus
from . import outcomes
from .clock import Clock
from .executor import Outcome
from .held import MAX_HELD

logger = logging.getLogger(__name__)

# Outcomes written in one transaction at most: as many as a burst may hold.
BATCH = MAX_HELD
GATHER = 2.0  # seconds an outcome may wait for its batch while runs wait for a worker
# Seconds from one write's start to the next's: one scheduler lead. At 100 runs a
# second, one write a run took the scheduler's database thread 1.9 ms of CPU a
# call; spaced, about five outcomes share a write (bench/steady_profile.py).
SPACING = 0.05
LONGEST_PAUSE = 10.0  # seconds between tries while the database refuses outcomes
# What a database says of a value it cannot store (PostgreSQL: DataError on a NUL;
# either: UnicodeEncodeError, a ValueError, on a lone surrogate), as opposed to an outage.
REFUSED = (DataError, IntegrityError, ProgrammingError, ValueError, TypeError)

DbCall = Callable[..., Awaitable[Any]]


class OutcomeRecorder:
    def __init__(
        self,
        *,
        db: DbCall,
        clock: Clock,
        gather: Callable[[], bool] = lambda: False,
        others: Callable[[], bool] = lambda: False,
    ) -> None:
        self._db = db
        self._clock = clock
        self._gather = gather  # whether outcomes gather before they are written
        self._others = others  # whether runs whose outcome is not pending are in flight
        self._go = asyncio.Event()  # gathering ended: write now
        self._hurry = asyncio.Event()  # shutting down: no more spacing
        self._hurrying = False
        self._last_write: float | None = None  # when the last write began (monotonic)
        self._pending: list[tuple[Run, Outcome, asyncio.Future]] = []
        self._flusher: asyncio.Task | None = None

    def stop_gathering(self) -> None:
        """Write what has gathered now (no run waits for a worker any more)."""
        self._go.set()

    def hurry(self) -> None:
        """Write every outcome as it comes from now on: the scheduler is shutting down."""
        self._hurrying = True
        self._hurry.set()

    async def record(self, run: Run, outcome: Outcome) -> tuple[Run | None, Run | None, list[Run]]:
        """Queue the outcome for the next batched write and wait for it.

        Returns (the finished run, its queued retry or None, its follow-ups), or
        (None, None, []) if another process ended the run first (replaced, or
        interrupted).
        """
        done = asyncio.get_running_loop().create_future()
        self._pending.append((run, outcome, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        return await asyncio.shield(done)

    async def _flush(self) -> None:
        while self._pending:
            if self._gather() and len(self._pending) < BATCH:
                # Set only when gathering ends: a stale set from an earlier burst is not it.
                self._go.clear()
                await self._clock.wait(GATHER, self._go)
            else:
                await self._spaced()
                if self._gather() and len(self._pending) < BATCH:
                    continue  # runs began to wait for a worker meanwhile: they go first
            self._last_write = self._clock.monotonic()
            batch, self._pending = self._pending[:BATCH], self._pending[BATCH:]
            items = [(run, vars(outcome)) for run, outcome, _ in batch]
            written: dict[int, tuple] = {}  # by the item's index
            attempt = 0
            # An outcome is never dropped: it is kept (memory holds one per run that
            # finished, so it is bounded by the runs in flight) until the database
            # takes it, however long an outage lasts.
            while True:
                try:
                    await self._write(items, [i for i in range(len(items)) if i not in written],
                                      written)  # fmt: skip
                    break
                except Exception:
                    attempt += 1
                    if attempt == 1:
                        logger.exception("could not record %d run(s) (try 1)", len(batch))
                    else:
                        logger.warning("could not record %d run(s) (try %d)", len(batch), attempt)
                    # Its own event, not the scheduler's wake: a new slot must not
                    # cut the database's breather short.
                    await self._clock.wait(min(2 ** (attempt - 1), LONGEST_PAUSE), asyncio.Event())
            for index, (_, _, done) in enumerate(batch):
                if not done.done():
                    done.set_result(written[index])

    async def _write(self, items: list, indexes: list[int], written: dict[int, tuple]) -> None:
        """Write these outcomes, into `written` by index.

        A refusal of what an outcome holds (a value the database cannot store: REFUSED)
        is the outcome's own: each is then written alone, and one refused alone is
        written again without what it carried (result, output, traceback), its status
        and retry kept; failing that too, as a failure of its own. So one run never
        holds back the outcomes of the runs after it. Anything else (the database
        away, locked, or its connection lost; a TASKS backend that does not answer)
        raises, and the whole batch waits and tries again.
        """
        try:
            results = await self._write_now([items[i] for i in indexes])
        except REFUSED as exc:
            if len(indexes) == 1:
                written[indexes[0]] = await self._write_refused(*items[indexes[0]], exc)
                return
            for index in indexes:
                await self._write(items, [index], written)
            return
        written.update(zip(indexes, results, strict=True))

    async def _write_now(self, items: list) -> list[tuple]:
        return await self._db(outcomes.finish_runs, items=items, now=self._clock.now())

    async def _write_refused(self, run: Run, outcome: dict, exc: Exception) -> tuple:
        refusal = f"{type(exc).__name__}: {exc}"
        note = f"its result and output could not be stored ({refusal})"
        bare = {**outcome, "result": None, "output": None, "traceback": "",
                "error": f"{outcome['error']}; {note}" if outcome["error"] else note}  # fmt: skip
        try:
            (result,) = await self._write_now([(run, bare)])
            logger.error("run %s: %s; recorded %s without them", run.pk, note, outcome["status"])
            return result
        except REFUSED:
            pass
        failed = {**bare, "status": RunStatus.FAILED, "retry_in": None,
                  "error": f"its outcome could not be stored ({refusal})"}  # fmt: skip
        (result,) = await self._write_now([(run, failed)])
        logger.error("run %s: its outcome could not be stored (%s); recorded failed", run.pk,
                     refusal)  # fmt: skip
        return result

    async def _spaced(self) -> None:
        """Wait until SPACING after the last write began, unless a batch is full or no
        other run in flight could share the write."""
        if self._last_write is None or self._hurrying or len(self._pending) >= BATCH:
            return
        if not self._others():
            return
        wait = self._last_write + SPACING - self._clock.monotonic()
        if wait > 0:
            await self._clock.wait(wait, self._hurry)
