"""Scheduler benchmark: fire lateness, dispatch throughput and idle CPU, side by side.

Runs this project's scheduler (on SQLite, in this process) and APScheduler 3's
AsyncIOScheduler (memory job store) on the same workloads of no-op async
tasks, one after the other on the same machine, and prints a table with the
ratios. Lateness is measured the same way for both: inside the task, the time
since the slot it was due for. Not a test: nothing here asserts.

    python bench/scheduler.py [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORKDIR = Path(tempfile.mkdtemp(prefix="sillo-bench-"))
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "sillo_dash.settings",
        "SILLO_DATA_DIR": str(WORKDIR),
        "DATABASE_URL": f"sqlite:///{WORKDIR / 'bench.sqlite3'}",
        "DJANGO_LOG_LEVEL": "WARNING",
        # Setup and readout happen between runs, never beside the loop's own queries.
        "DJANGO_ALLOW_ASYNC_UNSAFE": "true",
    }
)

import logging  # noqa: E402

import django  # noqa: E402

django.setup()
# APScheduler logs each coroutine it cancels at shutdown; that is not a result.
logging.getLogger("apscheduler").setLevel(logging.CRITICAL)

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

import schedules  # noqa: E402
from schedules.models import Run, Schedule  # noqa: E402
from schedules.scheduler.engine import Scheduler  # noqa: E402
from schedules.scheduler.executor import Executor  # noqa: E402
from schedules.timing import Interval  # noqa: E402

# (code, wall time) of every task execution, filled by the no-op tasks.
executions: list[tuple[str, float]] = []


@schedules.task("bench.noop")
async def noop(code: str = "") -> None:
    executions.append((code, time.time()))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def lateness(anchor: dict[str, float], every: float) -> list[float]:
    """Seconds between each execution and the slot it was due for."""
    late = []
    for code, at in executions:
        base = anchor[code]
        slot = base + ((at - base) // every) * every
        late.append(at - slot)
    return late


def fresh_database() -> None:
    connection.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{WORKDIR / 'bench.sqlite3'}{suffix}").unlink(missing_ok=True)
    call_command("migrate", verbosity=0)


def spread_anchors(n: int, every: float, start: float) -> dict[str, float]:
    return {f"s{i}": start + (i * every / n) for i in range(n)}


# ---------------------------------------------------------------- this project


async def run_sillo(anchors: dict[str, float], every: float, seconds: float) -> dict:
    fresh_database()
    now = datetime.now(UTC)
    rows = []
    for code, at in anchors.items():
        trigger = Interval(every, anchor=datetime.fromtimestamp(at, UTC))
        rows.append(
            Schedule(
                code=code,
                task_name="bench.noop",
                kwargs={"code": code},
                trigger=trigger.to_spec(),
                next_run_at=trigger.next_fire(now - timedelta(microseconds=1)),
                misfire_grace=3600,
                max_instances=1000,
            )
        )
    Schedule.objects.bulk_create(rows, batch_size=2000)
    connection.close()
    executions.clear()
    scheduler = Scheduler(executor=Executor(sync_workers=4))
    stop = asyncio.Event()
    cpu0, wall0 = time.process_time(), time.monotonic()
    loop_task = asyncio.create_task(scheduler.run_forever(stop))
    await asyncio.sleep(seconds)
    stop.set()
    await loop_task
    cpu = time.process_time() - cpu0
    wall = time.monotonic() - wall0
    runs = Run.objects.count()
    return {"executions": len(executions), "runs": runs, "cpu": cpu, "wall": wall}


# ---------------------------------------------------------------- APScheduler 3


async def run_apscheduler(anchors: dict[str, float], every: float, seconds: float) -> dict:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    executions.clear()
    scheduler = AsyncIOScheduler(timezone="UTC")
    for code, at in anchors.items():
        scheduler.add_job(
            noop,
            "interval",
            seconds=every,
            start_date=datetime.fromtimestamp(at, UTC),
            kwargs={"code": code},
            id=code,
            misfire_grace_time=3600,
            max_instances=1000,
            coalesce=False,
        )
    cpu0, wall0 = time.process_time(), time.monotonic()
    scheduler.start()
    await asyncio.sleep(seconds)
    scheduler.shutdown(wait=False)
    cpu = time.process_time() - cpu0
    return {
        "executions": len(executions),
        "runs": len(executions),
        "cpu": cpu,
        "wall": time.monotonic() - wall0,
    }


SYSTEMS = {"sillo": run_sillo, "apscheduler3": run_apscheduler}


# ---------------------------------------------------------------- scenarios


async def steady(n: int, every: float, seconds: float) -> dict:
    """n schedules, slots spread evenly over `every`: lateness under a steady load."""
    out = {}
    for name, system in SYSTEMS.items():
        start = time.time() + 3.0  # past setup
        anchors = spread_anchors(n, every, start)
        await system(anchors, every, seconds + 3.0)
        late = lateness(anchors, every)
        out[name] = {
            "runs": len(late),
            "p50_ms": percentile(late, 0.50) * 1000 if late else None,
            "p99_ms": percentile(late, 0.99) * 1000 if late else None,
            "max_ms": max(late) * 1000 if late else None,
            "runs_per_s": len(late) / seconds,
        }
    return out


async def burst(n: int) -> dict:
    """n schedules due at the same instant: how long until every one has started."""
    out = {}
    for name, system in SYSTEMS.items():
        due = time.time() + 4.0
        anchors = dict.fromkeys((f"s{i}" for i in range(n)), due)
        await system(anchors, 3600.0, 4.0 + max(3.0, n / 500))
        starts = sorted(at for _, at in executions)
        if len(starts) < n:
            out[name] = {"started": len(starts), "all_started_s": None, "runs_per_s": None}
            continue
        all_started = starts[-1] - due
        out[name] = {
            "started": len(starts),
            "all_started_s": all_started,
            "runs_per_s": n / max(all_started, 1e-9),
        }
    return out


async def idle(n: int, seconds: float) -> dict:
    """n schedules, none due during the window: CPU used while waiting."""
    out = {}
    for name, system in SYSTEMS.items():
        anchors = spread_anchors(n, 86400.0, time.time() + 3600)
        stats = await system(anchors, 86400.0, seconds)
        out[name] = {"cpu_percent": 100 * stats["cpu"] / stats["wall"]}
    return out


def ratio(ours: float | None, theirs: float | None) -> str:
    if not ours or not theirs:
        return "-"
    return f"{theirs / ours:.2f}x"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    window = 15.0 if args.quick else 40.0
    sizes = [1000, 10_000]

    print(f"scheduler benchmark: Python {platform.python_version()}, {os.cpu_count()} CPUs")
    results: dict = {"steady": {}, "burst": {}, "idle": {}}
    for n in sizes:
        results["steady"][n] = await steady(n, every=30.0, seconds=window)
    for n in sizes:
        results["burst"][n] = await burst(n)
    results["idle"][10_000] = await idle(10_000, 10.0 if args.quick else 30.0)

    print(f"\nsteady load: n schedules every 30s, slots spread evenly, {window:.0f}s window")
    columns = ("runs", "p50 ms", "p99 ms", "max ms", "runs/s")
    print(f"{'n':>7} {'system':14} " + " ".join(f"{c:>9}" for c in columns))
    for n, by_system in results["steady"].items():
        for name, row in by_system.items():
            print(
                f"{n:>7} {name:14} {row['runs']:>9} {row['p50_ms'] or 0:>9.1f} "
                f"{row['p99_ms'] or 0:>9.1f} {row['max_ms'] or 0:>9.1f} {row['runs_per_s']:>9.1f}"
            )
        p99 = ratio(by_system["sillo"]["p99_ms"], by_system["apscheduler3"]["p99_ms"])
        print(f"{'':>7} {'p99 ratio':14} {p99:>45}")

    print("\nburst: n schedules due at the same instant")
    print(f"{'n':>7} {'system':14} {'started':>8} {'all started after s':>20} {'runs/s':>9}")
    for n, by_system in results["burst"].items():
        for name, row in by_system.items():
            after = "-" if row["all_started_s"] is None else f"{row['all_started_s']:.3f}"
            rate = "-" if row["runs_per_s"] is None else f"{row['runs_per_s']:.0f}"
            print(f"{n:>7} {name:14} {row['started']:>8} {after:>20} {rate:>9}")

    print("\nidle: 10,000 schedules, none due")
    for name, row in results["idle"][10_000].items():
        print(f"{'':>7} {name:14} CPU {row['cpu_percent']:.2f}% of a core")
    print("\nratio = APScheduler figure / sillo figure (above 1: sillo is better)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    asyncio.run(main())
