"""SQLite's WAL checkpoints happen beside the scheduler's database thread, never on it."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from schedules.models import Run, RunReason, RunStatus
from schedules.scheduler import checkpoints

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="PostgreSQL has no checkpoint on commit"
)

PAGE = 4096  # SQLite's default page size: its automatic checkpoint comes at 1,000 pages


def log_frames() -> int:
    """Pages the WAL holds now (a checkpoint that copies nothing only reads the count)."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
        return cursor.fetchone()[1]


def write_runs(megabytes: int) -> None:
    """Commits that together take the log well past SQLite's automatic checkpoint."""
    for _ in range(megabytes):
        Run.objects.bulk_create(
            Run(schedule_code="bulky", task_name="test.echo", reason=RunReason.MANUAL,
                status=RunStatus.SUCCEEDED, traceback="x" * 100_000)
            for _ in range(10)
        )  # fmt: skip


def autocheckpoint() -> int:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        return cursor.fetchone()[0]


async def test_the_database_threads_commits_never_checkpoint(scheduler) -> None:
    """(No pass runs here, so the scheduler's own checkpointer does not start.)"""
    assert await scheduler.db(autocheckpoint) == 0
    assert await sync_to_async(autocheckpoint)() == 1000  # elsewhere SQLite's own rule holds
    await scheduler.db(write_runs, megabytes=6)
    # Six megabytes in six commits, and the log was never copied back and restarted.
    assert await scheduler.db(log_frames) * PAGE > 5_000_000


def test_the_checkpointer_copies_the_log_back(transactional_db) -> None:
    write_runs(1)
    busy, frames, copied = checkpoints.checkpoint()
    assert (busy, copied) == (0, frames) and frames > 0
