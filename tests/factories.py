"""Test helpers: a fake clock, and schedules and runs made through the services."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from io import StringIO

from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from schedules import services
from schedules.models import Run, Schedule
from schedules.scheduler.executor import Executor

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class FakeClock:
    """Time stands still until a test moves it; waits are recorded, not slept."""

    def __init__(self, now: datetime = T0) -> None:
        self.current = now
        self.waits: list[float] = []

    def now(self) -> datetime:
        return self.current

    def monotonic(self) -> float:
        return (self.current - T0).total_seconds()

    def advance(self, seconds: float) -> datetime:
        self.current += timedelta(seconds=seconds)
        return self.current

    async def wait(self, seconds: float, wake: asyncio.Event) -> None:
        self.waits.append(seconds)
        if not wake.is_set():
            self.current += timedelta(seconds=seconds)
        wake.clear()
        await asyncio.sleep(0)


def make_schedule(code: str, task_name: str, trigger: dict, *, now: datetime = T0, **fields):
    return services.schedule_create(
        code=code, task_name=task_name, trigger=trigger, now=now, **fields
    )


async def create(code: str, task_name: str, trigger: dict, **fields) -> Schedule:
    return await sync_to_async(make_schedule)(code, task_name, trigger, **fields)


async def runs_of(code: str) -> list[Run]:
    return await sync_to_async(
        lambda: list(Run.objects.filter(schedule_code=code).order_by("pk"))
    )()


async def reload(schedule: Schedule) -> Schedule:
    return await sync_to_async(Schedule.objects.get)(pk=schedule.pk)


async def schedule_of(code: str) -> Schedule:
    return await sync_to_async(Schedule.objects.get)(code=code)


def every(seconds: float) -> dict:
    return {"kind": "interval", "every": seconds}


def inline_executor(**options) -> Executor:
    """Task bodies in this process, so unit tests can gate them and never wait on workers."""
    return Executor(pool=None, sync_workers=8, **options)


def alive(pid: int) -> bool:
    """Whether a process still executes: a zombie (exited, not yet reaped) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        # Reaped meanwhile: before the open (no such file) or between the open and the
        # read (the kernel answers the read with ESRCH).
        return False


def cli(*args: str) -> str:
    """What `manage.py schedules ARGS` prints, run in this process."""
    out = StringIO()
    call_command("schedules", *args, stdout=out)
    return out.getvalue()


def plan_of(read, *, table: str = "schedules_run") -> str:
    """SQLite's plan of the last read of `table` that `read` made."""
    with CaptureQueriesContext(connection) as captured:
        read()
    sql = next(q["sql"] for q in reversed(captured.captured_queries)
               if q["sql"].startswith(("SELECT", "WITH")) and table in q["sql"])  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
        return " ".join(str(row) for row in cursor.fetchall())


def whole_table_reads(queries: list[dict], table: str) -> list[str]:
    """The captured queries that read every row of `table`: from it, with no WHERE or LIMIT."""
    quoted = f'FROM "{table}"'
    return [
        q["sql"]
        for q in queries
        if quoted in q["sql"] and " WHERE " not in q["sql"] and " LIMIT " not in q["sql"]
    ]


@contextmanager
def held_elsewhere(lock: Callable[[], object]) -> Iterator[None]:
    """Another process's open transaction: `lock` runs in it on another thread (and
    connection), which holds what it locked or wrote until the block ends."""
    locked, release = threading.Event(), threading.Event()

    def holding() -> None:
        try:
            with transaction.atomic():
                lock()
                locked.set()
                release.wait(10)  # (code that waited for it makes the test fail, not hang)
        finally:
            connections.close_all()

    other = threading.Thread(target=holding)
    other.start()
    try:
        assert locked.wait(10)
        yield
    finally:
        release.set()
        other.join()


def lock_run(run_id: int) -> Callable[[], object]:
    """Lock one run's row, as an outcome writer does."""
    return lambda: list(Run.objects.select_for_update().filter(pk=run_id).values_list("pk"))
