"""Several schedulers on PostgreSQL: lateness and throughput with 1, 2 and 4 processes.

Starts a throwaway PostgreSQL (as the test suite does, but with fsync and
synchronous_commit on), writes the schedules, runs N `manage.py runscheduler`
processes side by side and stops them with SIGTERM. The task's body notes its
code and start time (in a worker process, the default isolation); everything
is read from those notes, not from the run table:

- steady: 2,000 schedules every 10 s (200 runs/s), slots spread evenly;
  lateness (the task's start minus its slot) per window after a warm-up, each
  window a repetition; every slot must run exactly once: a slot whose body ran
  twice is counted (evidence the run table's unique constraint cannot hide),
  and so are the schedulers' own logged unique-slot conflicts;
- claims: the schedulers' own counters of due slots one read and another
  claimed first (the race each slot's compare-and-set settles) and of claims
  the unique-slot safety net stopped;
- bursts: sets of 1,000 schedules, each set due at one instant; seconds until
  the last run of a set started, each set a repetition.

Not a test: nothing here asserts.

    python bench/scheduler_postgres.py [--quick] [--json FILE]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import django
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import (  # noqa: E402
    ROOT,
    benchmark_options,
    burst_summary,
    percentile,
    summary,
    write_results,
)

from tests.production_profile import postgres  # noqa: E402

STEADY, EVERY = 2_000, 10.0
# Its body notes its code and start time in SILLO_BENCH_EXECUTIONS (bench/benchapp/tasks.py).
TASK = "bench.noop_worker"
# What the scheduler logs when the unique (schedule, slot, attempt) safety net fires
# (schedules/scheduler/claims.py): a second claim of one slot that reached the table.
UNIQUE_CONFLICT = "already has a run; skipped"
BURST = 1_000
BURST_TAIL = 6.0  # seconds after the last burst's window to wait for its last run
COUNTS = (1, 2, 4)
# One scheduler: the configuration the targets name (items 1 and 2). Two and four say
# how more schedulers share the work, which the full run and bench/ceiling.py measure.
QUICK_COUNTS = (1,)
QUICK = {"lead": 3.0, "warmup": 1.0, "windows": 2, "window": 1.5, "bursts": 2, "burst_every": 2.0}
FULL = {"lead": 5.0, "warmup": 2.0, "windows": 8, "window": 3.0, "bursts": 4, "burst_every": 4.0}


def schedule_row(code: str, anchor: datetime, every: float):
    """A schedule record as the model makes it (every column's default), so a new
    column never breaks the benchmark."""
    from schedules.models import Schedule

    spec = {"kind": "interval", "every": every, "jitter": 0.0, "anchor": anchor.isoformat(),
            "seed": code}  # fmt: skip
    return Schedule(
        code=code, task_name=TASK, kwargs={"code": code}, trigger=spec, tz="UTC", max_attempts=1,
        retry_delay=10, max_instances=1, overlap="skip", misfire="skip", misfire_grace=3600,
        next_run_at=anchor,
    )  # fmt: skip


# Read back from the server, not assumed from how it was started.
SERVER_SETTINGS = ("server_version", "fsync", "synchronous_commit", "full_page_writes",
                   "wal_sync_method")  # fmt: skip


def server_settings(db) -> dict:
    return {name: db.execute(f"SHOW {name}").fetchone()[0] for name in SERVER_SETTINGS}


def read_executions(path: Path) -> list[tuple[str, float]]:
    """(code, epoch seconds) of every task body that ran (bench/benchapp/tasks.py)."""
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        code, _, at = line.partition(" ")
        if at:
            found.append((code, float(at)))
    return found


def start_schedulers(env: dict, executions: Path, logs: list[Path]) -> list[subprocess.Popen]:
    """One `runscheduler` per log file, their task bodies noting into `executions`."""
    executions.unlink(missing_ok=True)
    processes = []
    for log in logs:
        with log.open("w") as output:
            processes.append(
                subprocess.Popen(
                    [sys.executable, str(ROOT / "manage.py"), "runscheduler"],
                    env={**env, "SILLO_BENCH_EXECUTIONS": str(executions)},
                    stdout=subprocess.DEVNULL,
                    stderr=output,
                )  # fmt: skip
            )
    return processes


@contextmanager
def prepared_server(folder: Path) -> Iterator[tuple[str, dict, dict]]:
    """A throwaway durable PostgreSQL with the product's tables, this process's models
    pointed at it: (its database URL, the schedulers' environment, its settings)."""
    with postgres(durable=True) as server:
        url = server.rsplit("/", 1)[0] + "/sillo_bench"
        with psycopg.connect(server, autocommit=True) as db:
            db.execute("CREATE DATABASE sillo_bench")
            durability = server_settings(db)
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "bench.settings",
               "SILLO_DATA_DIR": str(folder), "DJANGO_LOG_LEVEL": "WARNING"}  # fmt: skip
        env.pop("REDIS_URL", None)
        subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate"], env=env, check=True,
                       capture_output=True)  # fmt: skip
        # This process writes the schedule records through the models, on that database.
        os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE",
                                               "SILLO_DATA_DIR")})  # fmt: skip
        django.setup()
        yield url, env, durability


def clear_tables(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("TRUNCATE schedules_run, schedules_schedule, schedules_schedulerinstance, "
                   "schedules_runcounter, schedules_countertotal CASCADE")  # fmt: skip


def run_case(url: str, env: dict, schedulers: int, shape: dict, folder: Path) -> dict:
    first = datetime.now(UTC) + timedelta(seconds=shape["lead"])
    measured = first + timedelta(seconds=shape["warmup"])
    burst_at = measured + timedelta(seconds=shape["windows"] * shape["window"] + 0.5)
    rows = [
        schedule_row(f"s{i}", first + timedelta(seconds=EVERY * i / STEADY), EVERY)
        for i in range(STEADY)
    ]
    for k in range(shape["bursts"]):
        at = burst_at + timedelta(seconds=k * shape["burst_every"])
        rows += [schedule_row(f"b{k}.{i}", at, 86400.0) for i in range(BURST)]
    clear_tables(url)
    from schedules.models import Schedule

    Schedule.objects.bulk_create(rows, batch_size=1000)
    executions = folder / f"executions-{schedulers}.txt"
    logs = [folder / f"scheduler-{schedulers}-{i}.log" for i in range(schedulers)]
    processes = start_schedulers(env, executions, logs)
    ends = burst_at + timedelta(seconds=shape["bursts"] * shape["burst_every"] + 1.0)
    time.sleep(max(0.0, (ends - datetime.now(UTC)).total_seconds()))
    # Slower than the bursts: a few more seconds to start them all (as on SQLite).
    deadline = time.monotonic() + BURST_TAIL
    wanted = shape["bursts"] * BURST
    while time.monotonic() < deadline:
        if sum(1 for code, _ in read_executions(executions) if code[0] == "b") >= wanted:
            break
        time.sleep(0.2)
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(60)
    found = figures(read_executions(executions), logs, schedulers, shape, first, burst_at)
    return {**found, **claim_counts(url)}


def claim_counts(url: str) -> dict:
    """The schedulers' own claim counters (schedules/counters.py): slots one read and
    another claimed first, and claims the unique-slot safety net stopped."""
    with psycopg.connect(url, autocommit=True) as db:
        counts = dict(db.execute(
            "SELECT name, sum(value) FROM schedules_runcounter WHERE name LIKE 'claims:%%' "
            "GROUP BY name"
        ).fetchall())  # fmt: skip
    return {"claims_lost": int(counts.get("claims:lost", 0)),
            "claim_conflicts": int(counts.get("claims:conflict", 0))}  # fmt: skip


def figures(executions, logs, schedulers, shape, first, burst_at) -> dict:
    """Lateness from the task bodies (when each task started, not when its slot was
    claimed), and slots run twice counted from the same evidence: how many times
    each slot's body ran, whatever the run table holds."""
    first_s, measured_s = first.timestamp(), first.timestamp() + shape["warmup"]
    burst_s = burst_at.timestamp()
    windows: list[list[float]] = [[] for _ in range(shape["windows"])]
    bursts: list[list[float]] = [[] for _ in range(shape["bursts"])]
    ran: Counter = Counter()
    for code, at in executions:
        if code.startswith("b"):
            k = int(code[1:].split(".")[0])
            slot = burst_s + k * shape["burst_every"]
            bursts[k].append(at - slot)
        else:
            anchor = first_s + EVERY * int(code[1:]) / STEADY
            slot = anchor + ((at - anchor) // EVERY) * EVERY
            index = int((slot - measured_s) // shape["window"])
            if 0 <= index < shape["windows"]:
                windows[index].append(at - slot)
        ran[code, round(slot, 3)] += 1
    return {
        "schedulers": schedulers,
        "runs": sum(len(w) for w in windows),
        "expected": round(STEADY / EVERY * shape["windows"] * shape["window"]),
        "p50_ms": summary(percentile(w, 0.5) * 1000 if w else None for w in windows),
        "p99_ms": summary(percentile(w, 0.99) * 1000 if w else None for w in windows),
        "max_ms": summary(max(w) * 1000 if w else None for w in windows),
        "executed_twice": sum(1 for count in ran.values() if count > 1),
        "unique_conflicts": sum(log.read_text().count(UNIQUE_CONFLICT) for log in logs),
        "burst": burst_summary(bursts, BURST),
    }


def main() -> None:
    parser = benchmark_options(__doc__, quick="shorter phases")
    parser.add_argument("--counts", default=None, help="schedulers (default: 1,2,4; quick: 1,2)")
    args = parser.parse_args()
    default = QUICK_COUNTS if args.quick else COUNTS
    counts = [int(n) for n in args.counts.split(",")] if args.counts else list(default)
    shape = QUICK if args.quick else FULL
    folder = Path(tempfile.mkdtemp(prefix="sillo-bench-pg-"))
    print(f"PostgreSQL: {STEADY} schedules every {EVERY:g}s ({STEADY / EVERY:.0f} runs/s) and "
          f"bursts of {BURST}; {shape}", flush=True)  # fmt: skip
    results = []
    with prepared_server(folder) as (url, env, durability):
        print(f"PostgreSQL {durability}", flush=True)
        for count in counts:
            row = run_case(url, env, count, shape, folder)
            results.append(row)
            p99, burst = row["p99_ms"], row["burst"]["all_started_s"]
            print(
                f"{count} scheduler(s): {row['runs']}/{row['expected']} runs, p99 "
                f"{p99['median'] if p99 else float('nan'):.1f} ms, slots executed twice "
                f"{row['executed_twice']}, unique-slot conflicts {row['unique_conflicts']} "
                f"logged, {row['claim_conflicts']} counted; claims lost {row['claims_lost']}; "
                f"bursts started {row['burst']['started']}, the last "
                f"after {burst['median'] if burst else float('nan'):.2f}s",
                flush=True,
            )
    settings = {"steady": STEADY, "every": EVERY, "burst": BURST, "counts": counts,
                "database": "PostgreSQL", "durability": {"PostgreSQL": {"sillo": durability}},
                "shape": shape, "quick": args.quick}  # fmt: skip
    write_results(args.json, "scheduler_postgres", settings, {"cases": results})


if __name__ == "__main__":
    main()
