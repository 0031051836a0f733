"""Claims and outcome writes on their own threads where the database takes writes side
by side (PostgreSQL), on one where it takes one writer at a time (SQLite)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.db import connection

from schedules.models import Run, RunStatus
from tests.factories import create, every


@pytest.mark.django_db(transaction=True)
async def test_a_claim_goes_ahead_while_outcomes_are_being_written(scheduler) -> None:
    writing, release = threading.Event(), threading.Event()

    def outcome_write() -> int:
        writing.set()
        release.wait(30)  # a batch of outcomes waiting for its commit
        return threading.get_ident()

    outcomes = asyncio.ensure_future(scheduler.db_outcomes(outcome_write))
    await asyncio.to_thread(writing.wait, 30)
    if connection.vendor == "sqlite":
        # One writer at a time: a second thread would only wait for SQLite's lock.
        release.set()
        assert await outcomes == await scheduler.db(threading.get_ident)
        return
    await create("due", "test.echo", every(60))
    scheduler.clock.advance(61)
    await asyncio.wait_for(scheduler.run_pass(), 30)  # not behind the outcome write
    statuses = await asyncio.to_thread(lambda: list(Run.objects.values_list("status", flat=True)))
    assert statuses == [RunStatus.RUNNING]  # claimed; its outcome waits its turn
    assert not outcomes.done()
    release.set()
    assert await outcomes != await scheduler.db(threading.get_ident)
