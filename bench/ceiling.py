"""Sustained ceiling: the steady rate at which p99 lateness passes 100 ms, on SQLite
and PostgreSQL with 1, 2 and 4 schedulers.

Each configuration is a ramp of steps. A step writes fresh records, starts K
`manage.py runscheduler` processes over them (the product's defaults: runs in
worker processes; the benchmark's no-op worker task), measures one window
after a warm-up and stops them with SIGTERM. Schedules fire every 10 s, their
slots spread evenly, so N schedules fall due N/10 times a second.

Per step, from the task bodies' notes (bench/benchapp/tasks.py): lateness
(the body's start minus its slot), how many of the window's slots ran, and
slots whose body ran twice; from the records: how late the last scheduler
registered after the window began; from /proc/stat: how busy the machine's
cores were during the window (what limits the rate on this machine). A step
holds if its p99 is under 100 ms and every slot of its window ran. The rate
doubles until a step does not hold, then one step is measured between it and
the last that held (×1.4); a first step that does not hold halves the rate
until one does. The knee is the highest rate that held.

A quick run ramps SQLite with one scheduler only, from 800 runs/s; the full
run ramps all six configurations from 100. Each database is ramped in a
child process of its own (Django is set up once per process); PostgreSQL is
a throwaway durable server (fsync and synchronous_commit on).

    python bench/ceiling.py [--quick] [--json FILE]
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, benchmark_options, percentile, write_results  # noqa: E402
from scheduler_postgres import read_executions  # noqa: E402

EVERY = 10.0
MIN_RATE, MAX_RATE = 50.0, 6_400.0
LATE_MS = 100.0
DATABASES = ("SQLite", "PostgreSQL")
COUNTS = (1, 2, 4)
# A quick ramp is one configuration from 800 runs/s: three steps for any knee from 400
# to 1,600 (this 2-core VM's has been 570 to 1,130; each step costs about 12 s, and from
# 400 a knee of 800 took four); the full run ramps every
# configuration from 100.
SHAPE = {
    "quick": {"warmup": 1.5, "window": 2.0, "first_rate": 800.0,
              "configs": [["SQLite", 1]]},
    "full": {"warmup": 3.0, "window": 10.0, "first_rate": 100.0,
             "configs": [[db, n] for db in DATABASES for n in COUNTS]},
}  # fmt: skip
# Seconds from writing a step's records to its first slot: the schedulers' start
# (Python, Django, a fork server and its workers each), more for more of them.
LEAD_BASE, LEAD_PER_SCHEDULER, LEAD_PER_SCHEDULE = 3.0, 1.0, 6.5e-5
STOP_WAIT = 60.0


def anchors(n: int, first: float) -> list[float]:
    return [first + EVERY * i / n for i in range(n)]


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of every core since boot (the first line of /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields) - idle, sum(fields)


def start_schedulers(count: int, env: dict, logs: Path) -> list[subprocess.Popen]:
    processes = []
    for i in range(count):
        with (logs / f"scheduler-{i}.log").open("w") as log:
            processes.append(
                subprocess.Popen(
                    [sys.executable, str(ROOT / "manage.py"), "runscheduler"],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )  # fmt: skip
            )
    return processes


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def last_registered() -> float | None:
    """When the last scheduler of the step registered (epoch s)."""
    from django.db.models import Max

    from schedules.models import SchedulerInstance

    at = SchedulerInstance.objects.filter(kind="scheduler").aggregate(at=Max("started_at"))["at"]
    return at.timestamp() if at else None


def one_rate(rate: float, count: int, shape: dict, database: Database) -> dict:
    """One step: `count` schedulers at `rate` runs a second, over fresh records."""
    n = round(rate * EVERY)
    database.fresh()
    first = time.time() + LEAD_BASE + LEAD_PER_SCHEDULER * count + LEAD_PER_SCHEDULE * n
    from schedule_records import insert_schedule_rows

    insert_schedule_rows(
        {f"s{i}": (at, EVERY) for i, at in enumerate(anchors(n, first))}, "bench.noop_worker"
    )
    database.close()
    executions = database.folder / "executions.txt"
    executions.unlink(missing_ok=True)
    env = {**database.env, "SILLO_BENCH_EXECUTIONS": str(executions)}
    spawned = time.time()
    processes = start_schedulers(count, env, database.folder)
    begin = first + shape["warmup"]
    end = begin + shape["window"]
    try:
        time.sleep(max(0.0, begin - time.time()))
        busy_before, total_before = cpu_times()
        time.sleep(max(0.0, end - time.time()))
        busy_after, total_after = cpu_times()
        time.sleep(1.0)  # the window's last slots start
    finally:
        stop(processes)
    registered = last_registered()
    database.close()
    first_start: dict[tuple[str, float], float] = {}
    twice = 0
    for code, at in read_executions(executions):
        anchor = first + EVERY * int(code[1:]) / n
        slot = round(anchor + ((at - anchor) // EVERY) * EVERY, 6)
        if not begin <= slot < end:
            continue
        if (code, slot) in first_start:
            twice += 1
            first_start[code, slot] = min(first_start[code, slot], at)
        else:
            first_start[code, slot] = at
    late = [(at - slot) * 1000 for (_, slot), at in first_start.items()]
    expected = round(rate * shape["window"])
    p99 = percentile(late, 0.99) if late else None
    return {
        "rate": rate,
        "schedules": n,
        # Negative: the last scheduler was up after the first slot (the warm-up absorbs it).
        "ready_early_s": None if registered is None else first - registered,
        "start_s": None if registered is None else registered - spawned,
        "runs": len(late),
        "expected": expected,
        "executed_twice": twice,
        "p50_ms": percentile(late, 0.5) if late else None,
        "p99_ms": p99,
        "max_ms": max(late) if late else None,
        "cpu_busy": (busy_after - busy_before) / max(1, total_after - total_before),
        "held": p99 is not None and p99 < LATE_MS and len(late) >= expected,
    }


def ramp(count: int, shape: dict, database: Database) -> list[dict]:
    """Up from the first rate (doubling) until a step does not hold; down (halving) if
    the first did not, until one does; then one step between the highest that held
    and the lowest that did not (×1.4)."""

    def step(rate: float) -> dict:
        found = one_rate(rate, count, shape, database)
        print(
            f"{database.name}, {count} scheduler(s), {rate:6.0f}/s: {found['runs']}/"
            f"{found['expected']} ran, p99 {found['p99_ms'] or float('nan'):.1f} ms, cores "
            f"{found['cpu_busy']:.0%} busy, {'held' if found['held'] else 'passed the limit'}",
            flush=True,
        )
        return found

    steps = [step(shape["first_rate"])]
    factor = 2.0 if steps[0]["held"] else 0.5
    while steps[-1]["held"] == steps[0]["held"]:
        rate = steps[-1]["rate"] * factor
        if not MIN_RATE <= rate <= MAX_RATE:
            break
        steps.append(step(rate))
    held = [s["rate"] for s in steps if s["held"]]
    if held and len(held) < len(steps):
        steps.append(step(round(max(held) * 2**0.5, -1)))
    return sorted(steps, key=lambda s: s["rate"])


class Database:
    """Where a child's steps keep their records: `fresh()` empties it, `env` is the
    schedulers' environment."""

    def __init__(self, name: str, folder: Path, env: dict, fresh: Callable[[], None]) -> None:
        self.name, self.folder, self.env, self.fresh = name, folder, env, fresh

    @staticmethod
    def close() -> None:
        from django.db import connection

        connection.close()  # the schedulers get the database to themselves (SQLite's lock)


@contextmanager
def sqlite() -> Iterator[tuple[Database, dict]]:
    import scheduler_systems  # configures Django on the benchmark's SQLite file

    yield (
        Database("SQLite", scheduler_systems.WORKDIR, dict(os.environ),
                 scheduler_systems.fresh_database),
        {"SQLite": {"sillo": scheduler_systems.django_durability()}},
    )  # fmt: skip


@contextmanager
def postgresql() -> Iterator[tuple[Database, dict]]:
    from scheduler_postgres import clear_tables, prepared_server

    folder = Path(tempfile.mkdtemp(prefix="sillo-bench-ceiling-"))
    with prepared_server(folder) as (url, env, durability):
        yield (
            Database("PostgreSQL", folder, env, lambda: clear_tables(url)),
            {"PostgreSQL": {"sillo": durability}},
        )


def child(name: str, counts: list[int], shape: dict) -> dict:
    with (sqlite if name == "SQLite" else postgresql)() as (database, durability):
        configs = [
            {"database": name, "schedulers": count, "steps": ramp(count, shape, database)}
            for count in counts
        ]
    return {"configs": configs, "durability": durability}


def main() -> None:
    parser = benchmark_options(__doc__, quick="SQLite with one scheduler, shorter windows")
    parser.add_argument("--child", nargs=3, help="internal")
    args = parser.parse_args()
    mode = "quick" if args.quick else "full"
    shape = SHAPE[mode]
    if args.child:
        name, counts, out = args.child
        found = child(name, [int(c) for c in counts.split(",")], shape)
        Path(out).write_text(json.dumps(found))
        return
    configs, durability = [], {}
    for name in DATABASES:
        counts = [n for db, n in shape["configs"] if db == name]
        if not counts:
            continue
        out = Path(tempfile.mkdtemp(prefix="sillo-bench-ceiling-")) / "ceiling.json"
        command = [sys.executable, __file__, "--child", name, ",".join(map(str, counts)), str(out)]
        subprocess.run(command + (["--quick"] if args.quick else []), check=True)
        found = json.loads(out.read_text())
        configs += found["configs"]
        durability.update(found["durability"])
    settings = {
        "every_s": EVERY, "first_rate": shape["first_rate"], "max_rate": MAX_RATE,
        "late_ms": LATE_MS, "shape": shape, "quick": args.quick, "cores": os.cpu_count(),
        "configs": shape["configs"], "durability": durability,
        "mode": "process (the default), `manage.py runscheduler` each",
    }  # fmt: skip
    write_results(args.json, "ceiling", settings, {"configs": configs})


if __name__ == "__main__":
    main()
