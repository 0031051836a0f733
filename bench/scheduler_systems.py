"""The schedulers that bench/scheduler.py runs side by side, behind one interface.

Each system has `prepare(plan)`, which writes its records before it starts
(run in the parent process, not measured), and `run(plan, phases)`, which
starts it in this process, calls `phases(ready_at)` while it is up and stops
it after. Every system runs the same no-op coroutine, which notes the wall
time it started at.

Importing this module configures Django on the benchmark's SQLite file
(SILLO_BENCH_DIR, else a new temporary folder).
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
WORKDIR = Path(os.environ.get("SILLO_BENCH_DIR") or tempfile.mkdtemp(prefix="sillo-bench-"))
os.environ["SILLO_BENCH_DIR"] = str(WORKDIR)
DATABASE = WORKDIR / "bench.sqlite3"
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        # Worker processes note their executions here (bench/benchapp/tasks.py).
        "SILLO_BENCH_EXECUTIONS": str(WORKDIR / "executions.txt"),
        "SILLO_DATA_DIR": str(WORKDIR),
        "DATABASE_URL": f"sqlite:///{DATABASE}",
        "DJANGO_LOG_LEVEL": "WARNING",
        # Setup and readout happen before and after a system runs, never beside it.
        "DJANGO_ALLOW_ASYNC_UNSAFE": "true",
    }
)

import django  # noqa: E402

django.setup()
# APScheduler logs each coroutine it cancels at shutdown; that is not a result.
logging.getLogger("apscheduler").setLevel(logging.CRITICAL)

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from schedule_records import insert_schedule_rows  # noqa: E402

import schedules  # noqa: E402
from bench.benchapp import polls  # noqa: E402
from schedules.models import Schedule  # noqa: E402
from schedules.scheduler.engine import Scheduler  # noqa: E402
from schedules.timing import Interval  # noqa: E402

# Every system that keeps its records on disk runs with the product's own SQLite
# settings (journal mode and synchronous), so none buys speed with less durability.
SQLITE_PRAGMAS = settings.DATABASES["default"]["OPTIONS"]["init_command"]
SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def sqlite_engine():
    """APScheduler's SQLAlchemy engine on the benchmark's file, with SQLITE_PRAGMAS."""
    from sqlalchemy import create_engine, event

    engine = create_engine(f"sqlite:///{DATABASE}")

    @event.listens_for(engine, "connect")
    def same_durability(dbapi_connection, _record) -> None:
        dbapi_connection.executescript(SQLITE_PRAGMAS)

    return engine


def _pragmas(cursor) -> dict:
    """The settings a connection really has, read back rather than assumed."""
    journal = cursor.execute("PRAGMA journal_mode").fetchone()[0]
    level = cursor.execute("PRAGMA synchronous").fetchone()[0]
    return {"journal_mode": journal, "synchronous": SYNCHRONOUS.get(level, level)}


def django_durability() -> dict:
    with connection.cursor() as cursor:
        return _pragmas(cursor)


def sqlalchemy_durability() -> dict:
    engine = sqlite_engine()
    raw = engine.raw_connection()
    try:
        return _pragmas(raw.cursor())
    finally:
        raw.close()
        engine.dispose()


def in_memory() -> dict:
    return {"storage": "memory only (nothing on disk)"}


class Executions(list):
    """(code, wall time) of every task execution: noted here by in-process tasks, and
    read from the file that worker processes append to."""

    def __iter__(self):
        yield from super().__iter__()
        path = Path(os.environ["SILLO_BENCH_EXECUTIONS"])
        if path.exists():
            for line in path.read_text().splitlines():
                code, _, at = line.partition(" ")
                if at:
                    yield code, float(at)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __reduce__(self):  # a plain list of everything, for the parent
        return (list, (list(self),))


executions = Executions()


@schedules.task("bench.noop", isolation="inline")
async def noop(code: str = "") -> None:
    executions.append((code, time.time()))


@dataclass(frozen=True)
class Plan:
    """Every schedule of one run: code -> (anchor in epoch s, interval in s)."""

    slots: dict[str, tuple[float, float]]


Phases = Callable[[float], Awaitable[None]]


# ---------------------------------------------------------------- records


def fresh_database() -> None:
    connection.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DATABASE}{suffix}").unlink(missing_ok=True)
    call_command("migrate", verbosity=0)


def schedule_rows(plan: Plan, task_name: str = "bench.noop") -> None:
    """The schedule records sillo and the naive baseline read (the same table and rows),
    in a fresh database."""
    fresh_database()
    insert_schedule_rows(plan.slots, task_name)
    connection.close()


def worker_schedule_rows(plan: Plan) -> None:
    """The same records, naming a task that runs in worker processes (the default)."""
    Path(os.environ["SILLO_BENCH_EXECUTIONS"]).unlink(missing_ok=True)
    schedule_rows(plan, task_name="bench.noop_worker")


def aps_jobs(scheduler, plan: Plan) -> None:
    for code, (at, every) in plan.slots.items():
        scheduler.add_job(
            noop, "interval", seconds=every, start_date=datetime.fromtimestamp(at, UTC),
            kwargs={"code": code}, id=code, misfire_grace_time=3600, max_instances=1000,
            coalesce=False,
        )  # fmt: skip


def sqlalchemy_jobs(plan: Plan) -> None:
    """APScheduler's job table in the benchmark's SQLite file, holding the plan.

    APScheduler adds a job with one INSERT and commit each; the same rows (its
    own pickled job states) go in with one executemany instead, so 100,000
    jobs take seconds rather than minutes. Setup is not measured either way.
    """
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.background import BackgroundScheduler
    from apscheduler.util import datetime_to_utc_timestamp

    fresh_database()  # the same file as sillo's records
    staging = BackgroundScheduler(timezone="UTC")
    staging.start(paused=True)
    aps_jobs(staging, plan)
    store = SQLAlchemyJobStore(engine=sqlite_engine())
    store.jobs_t.create(store.engine, checkfirst=True)
    rows = [
        {
            "id": job.id,
            "next_run_time": datetime_to_utc_timestamp(job.next_run_time),
            "job_state": pickle.dumps(job.__getstate__(), store.pickle_protocol),
        }
        for job in staging.get_jobs()
    ]
    staging.shutdown(wait=False)
    with store.engine.begin() as db:
        db.execute(store.jobs_t.insert(), rows)
    store.engine.dispose()


def nothing(plan: Plan) -> None:
    """The memory store is filled when it starts: those jobs are its memory."""


# ---------------------------------------------------------------- systems


async def run_sillo(plan: Plan, phases: Phases) -> None:
    """This project's scheduler with its default settings: runs execute in worker
    processes, or in the scheduler for the inline task (`sillo-inline`)."""
    scheduler = Scheduler()
    stop = asyncio.Event()
    # Ready once started (workers up, instance registered), as the peers are once their
    # start() returns: the idle phase then measures idling, not the pool's start.
    await scheduler.start()
    loop_task = asyncio.create_task(scheduler.run_forever(stop))
    await phases(time.time())
    stop.set()
    await loop_task


def sillo_until(until: float, enough: Callable[[], bool] = lambda: False) -> dict:
    """In a benchmark's child process: this project's scheduler over the records
    written, until `until` or until `enough()`; when it was ready, and what it ran."""

    async def phases(ready: float) -> None:
        found["ready"] = ready
        while time.time() < until and not enough():
            await asyncio.sleep(min(0.1, max(0.0, until - time.time())))

    found: dict = {}
    asyncio.run(run_sillo(Plan({}), phases))
    found["executions"] = list(executions)
    return found


# Seconds each system takes to be set up, per schedule (measured at 100,000:
# records written in this process, or jobs added in the child), with room.
SETUP_PER_SCHEDULE = {
    # 100,000 at 5e-5: ready 1.1 s after its first slot, a window lost. Since the
    # search index (e766f6c: an FTS5 trigger and schedule_task_idx on every insert),
    # 6.5e-5 and 5e-5 left them ready 1.7 and 0.4 s early (full run of 6d089f3).
    "sillo": 8e-5,
    "sillo-inline": 6.5e-5,
    "naive": 5e-5,
    "poll": 5e-5,
    "apscheduler3-memory": 5e-5,
    # 100,000 at 7e-5 (SETUP_BASE 3.0): ready 5.4 s early in one run, 3.2 s late (a
    # window lost) in the next.
    "apscheduler3-sqlalchemy": 1e-4,
}
# Seconds a system's process takes to start whatever its size (Python, Django, a fork
# server set up with Django): 2 s left Sillo Dash's steady windows unmeasured at 1,000
# schedules on a busy 2-core VM (its first slot came before it was ready), and 3.0 left
# Sillo Dash at 100,000 ready 0.1 s late, where other runs had it 2 s early.
SETUP_BASE = 3.5


def setup_seconds(system: str, schedules: int) -> float:
    """How long after writing its records a system's child may take to be ready."""
    return SETUP_BASE + schedules * SETUP_PER_SCHEDULE.get(system, 1e-4)


async def _run_aps(plan: Plan, phases: Phases, jobstore) -> None:
    from apscheduler.jobstores.memory import MemoryJobStore
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    scheduler = AsyncIOScheduler(timezone="UTC", jobstores={"default": jobstore})
    if isinstance(jobstore, MemoryJobStore):
        scheduler.start(paused=True)
        aps_jobs(scheduler, plan)
        scheduler.resume()
    else:
        scheduler.start()
    await phases(time.time())
    scheduler.shutdown(wait=False)


async def run_aps_memory(plan: Plan, phases: Phases) -> None:
    from apscheduler.jobstores.memory import MemoryJobStore

    await _run_aps(plan, phases, MemoryJobStore())


async def run_aps_sqlalchemy(plan: Plan, phases: Phases) -> None:
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore

    await _run_aps(plan, phases, SQLAlchemyJobStore(engine=sqlite_engine()))


def take_due(records, now: datetime) -> list[str]:
    """Of these records, take the due ones and save their next slot."""
    due, changed = [], []
    for schedule in records:
        if schedule.next_run_at <= now:
            due.append(schedule.code)
            spec = schedule.trigger
            anchor = datetime.fromisoformat(spec["anchor"])
            schedule.next_run_at = Interval(spec["every"], anchor=anchor).next_fire(now)
            changed.append(schedule)
    Schedule.objects.bulk_update(changed, ["next_run_at"], batch_size=1000)
    return due


def naive_scan(now: datetime) -> list[str]:
    """Read every active schedule, take the due ones, save their next slot."""
    return take_due(polls.every_record(), now)


def indexed_poll(now: datetime) -> list[str]:
    """Read only the due schedules, through the due index; take them, save their next slot."""
    return take_due(polls.due_records(now), now)


async def every_second(read: Callable[[datetime], list[str]], phases: Phases) -> None:
    """Wake every second, read the due schedules with `read`, start them (no run log)."""
    loop = asyncio.get_running_loop()
    running: set[asyncio.Task] = set()

    async def forever() -> None:
        while True:
            tick = time.monotonic()
            for code in await loop.run_in_executor(None, read, datetime.now(UTC)):
                task = asyncio.create_task(noop(code=code))
                running.add(task)
                task.add_done_callback(running.discard)
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))

    scanner = asyncio.create_task(forever())
    await phases(time.time())
    scanner.cancel()


async def run_naive(plan: Plan, phases: Phases) -> None:
    """Wake every second, scan every record, start the due ones."""
    await every_second(naive_scan, phases)


async def run_poll(plan: Plan, phases: Phases) -> None:
    """Wake every second, read the due records through an index, start them."""
    await every_second(indexed_poll, phases)


# name -> (prepare, run)
SYSTEMS: dict[str, tuple[Callable[[Plan], None], Callable[[Plan, Phases], Awaitable[None]]]] = {
    "sillo": (worker_schedule_rows, run_sillo),
    "sillo-inline": (schedule_rows, run_sillo),
    "apscheduler3-memory": (nothing, run_aps_memory),
    "apscheduler3-sqlalchemy": (sqlalchemy_jobs, run_aps_sqlalchemy),
    "naive": (schedule_rows, run_naive),
    "poll": (schedule_rows, run_poll),
}
# name -> how its storage is set up, read back from a connection made as the system makes it
DURABILITY: dict[str, Callable[[], dict]] = {
    "sillo": django_durability,
    "sillo-inline": django_durability,
    "apscheduler3-memory": in_memory,
    "apscheduler3-sqlalchemy": sqlalchemy_durability,
    "naive": django_durability,
    "poll": django_durability,
}
