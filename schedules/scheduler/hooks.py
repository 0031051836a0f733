"""Sending the run signals on a thread of their own, in order, never blocking the loop."""

from __future__ import annotations

import asyncio
import copy
import logging
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import close_old_connections

from ..choices import ERROR_OUTCOMES, FINISHED, RunStatus
from ..models import Run
from ..signals import run_failed, run_finished, run_started, run_succeeded

logger = logging.getLogger(__name__)


class Hooks:
    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sillo-hooks")
        self._last: Future | None = None

    def started(self, run: Run) -> None:
        if run_started.has_listeners(Run):
            self._send([(run_started, {})], run)

    def finished(self, run: Run, *, final: bool) -> None:
        """Every terminal outcome; the success and final-failure signals beside it."""
        if run.status not in FINISHED:
            return
        signals = [(run_finished, {"final": final})]
        if run.status == RunStatus.SUCCEEDED:
            signals.append((run_succeeded, {}))
        elif final and run.status in ERROR_OUTCOMES:
            signals.append((run_failed, {}))
        signals = [(signal, extra) for signal, extra in signals if signal.has_listeners(Run)]
        if signals:
            self._send(signals, run)

    def _send(self, signals: list, run: Run) -> None:
        # A copy: the loop goes on changing its own Run while receivers read this one.
        self._last = self._thread.submit(_send_robust, signals, copy.copy(run))

    async def drain(self) -> None:
        """Wait until every hook sent so far has run (tests, shutdown)."""
        if self._last is not None:
            await asyncio.wrap_future(self._last)

    def shutdown(self) -> None:
        self._thread.shutdown(wait=True)


def _send_robust(signals: list, run: Run) -> None:
    try:
        for signal, extra in signals:
            for receiver, result in signal.send_robust(sender=Run, run=run, **extra):
                if isinstance(result, Exception):
                    logger.error("run signal receiver %r failed: %r", receiver, result)
    finally:
        close_old_connections()  # receivers may use the ORM on this thread
