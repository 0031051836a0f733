"""The retention timer: a bounded round of pruning runs and the audit trail (retention.py),
the run tallies older than the schedule page reads (run_tallies.py), and the metrics'
counter totals folded (and recounted at start and daily: counter_totals.py), beside the
passes.

Its own thread and database connection, so a pass never waits behind a round;
one round at a time.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial

from django.db import connections

from .. import counter_totals, run_tallies
from ..conf import setting
from . import retention
from .dbcalls import db_call

logger = logging.getLogger(__name__)


class Pruner:
    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sillo-prune")
        self._cursor = retention.Cursor()
        self._round: asyncio.Task | None = None
        self._recounted_at: datetime | None = None

    @property
    def running(self) -> bool:
        return self._round is not None and not self._round.done()

    def start_round(self, now: datetime) -> None:
        """Start a round unless one is under way."""
        if not self.running:
            self._round = asyncio.create_task(self._prune(now), name="prune")

    async def wait(self) -> None:
        if self._round is not None:
            await asyncio.wait([self._round])

    async def close(self) -> None:
        await self.wait()
        self._thread.submit(connections.close_all)
        self._thread.shutdown(wait=True)

    async def _prune(self, now: datetime) -> None:
        kwargs = {
            "keep": setting("SILLO_RUNS_PER_SCHEDULE"),
            "max_age_days": setting("SILLO_RUNS_MAX_AGE_DAYS"),
            "now": now,
            "cursor": self._cursor,
        }
        audit = {"max_age_days": setting("SILLO_AUDIT_MAX_AGE_DAYS"), "now": now}
        try:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._thread, partial(db_call, retention.prune_pass, kwargs))
            await loop.run_in_executor(self._thread, partial(db_call, retention.prune_audit, audit))
            tallies = {"now": now}
            await loop.run_in_executor(self._thread, partial(db_call, run_tallies.prune, tallies))
            await loop.run_in_executor(self._thread, partial(db_call, counter_totals.fold, {}))
            last = self._recounted_at
            if last is None or now - last >= counter_totals.RECOUNT_EVERY:
                await loop.run_in_executor(
                    self._thread, partial(db_call, counter_totals.recount, {})
                )
                self._recounted_at = now
        except Exception:
            logger.exception("pruning runs failed; trying again at the next round")
