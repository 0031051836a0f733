"""SQLite's WAL checkpoints happen beside the scheduler's database thread, and its log
stays bounded."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, connections

from schedules.models import Run, RunReason, RunStatus
from schedules.scheduler import checkpoints

pytestmark = pytest.mark.sqlite  # PostgreSQL has no checkpoint on commit

PAGE = 4096  # SQLite's default page size: its own checkpoint comes at 1,000 pages


@pytest.fixture
def empty_log(transactional_db) -> None:
    """The log copied back and its file emptied: what earlier tests wrote is not measured."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert cursor.fetchone()[0] == 0  # not busy: the file is empty now


def log_bytes() -> int:
    """The WAL file's size: it grows while the log does, and is reused once it starts over."""
    return os.path.getsize(f"{connection.settings_dict['NAME']}-wal")


def write_runs(megabytes: int) -> int:
    """Commits of a megabyte each; returns the largest the log file grew meanwhile."""
    most = 0
    for _ in range(megabytes):
        Run.objects.bulk_create(
            Run(schedule_code="bulky", task_name="test.echo", reason=RunReason.MANUAL,
                status=RunStatus.SUCCEEDED, traceback="x" * 100_000)
            for _ in range(10)
        )  # fmt: skip
        most = max(most, log_bytes())
    return most


def autocheckpoint() -> int:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        return cursor.fetchone()[0]


async def test_the_database_threads_commits_leave_checkpoints_to_the_checkpointer(
    empty_log, scheduler
) -> None:
    """(No pass runs here, so the scheduler's own checkpointer does not start.)"""
    assert await scheduler.db(autocheckpoint) == checkpoints.OWN_CHECKPOINT_PAGES
    assert await sync_to_async(autocheckpoint)() == 1000  # elsewhere SQLite's own rule holds
    # Six megabytes in six commits, and the log was never copied back and started over.
    assert await scheduler.db(write_runs, megabytes=6) > 6_000_000


def test_the_database_threads_log_stays_bounded_without_the_checkpointer(
    empty_log, monkeypatch
) -> None:
    monkeypatch.setattr(checkpoints, "OWN_CHECKPOINT_PAGES", 500)
    thread = ThreadPoolExecutor(1, initializer=checkpoints.leave_to_the_checkpointer)
    try:
        most = thread.submit(write_runs, 6).result()
    finally:
        thread.submit(connections.close_all).result()
        thread.shutdown()
    # Past 500 pages its own commit copied the log back, and the log started over.
    assert 500 * PAGE < most < 500 * PAGE + 2_000_000


def test_the_checkpointer_copies_the_log_back(transactional_db) -> None:
    write_runs(1)
    busy, frames, copied = checkpoints.checkpoint()
    assert (busy, copied) == (0, frames) and frames > 0
