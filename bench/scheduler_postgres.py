"""Several schedulers on PostgreSQL: lateness and throughput with 1, 2 and 4 processes.

Starts a throwaway PostgreSQL (as the test suite does), writes the schedules,
runs N `manage.py runscheduler` processes side by side, stops them with
SIGTERM and reads everything from the run records:

- steady: 2,000 schedules every 10 s (200 runs/s), slots spread evenly;
  lateness (start minus slot) per window after a warm-up, each window a
  repetition; every slot must run exactly once;
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
from datetime import UTC, datetime, timedelta
from pathlib import Path

import django
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import ROOT, benchmark_options, percentile, summary, write_results  # noqa: E402

from tests.production_profile import postgres  # noqa: E402

STEADY, EVERY = 2_000, 10.0
BURST = 1_000
COUNTS = (1, 2, 4)
QUICK = {"lead": 3.0, "warmup": 1.0, "windows": 2, "window": 1.5, "bursts": 2, "burst_every": 2.0}
FULL = {"lead": 5.0, "warmup": 2.0, "windows": 8, "window": 3.0, "bursts": 4, "burst_every": 4.0}


def schedule_row(code: str, anchor: datetime, every: float):
    """A schedule record as the model makes it (every column's default), so a new
    column never breaks the benchmark."""
    from schedules.models import Schedule

    spec = {"kind": "interval", "every": every, "jitter": 0.0, "anchor": anchor.isoformat(),
            "seed": code}  # fmt: skip
    return Schedule(
        code=code, task_name="demo.heartbeat", trigger=spec, tz="UTC", max_attempts=1,
        retry_delay=10, max_instances=1, overlap="skip", misfire="skip", misfire_grace=3600,
        next_run_at=anchor,
    )  # fmt: skip


# Read back from the server, not assumed from how it was started.
SERVER_SETTINGS = ("server_version", "fsync", "synchronous_commit", "full_page_writes",
                   "wal_sync_method")  # fmt: skip


def server_settings(db) -> dict:
    return {name: db.execute(f"SHOW {name}").fetchone()[0] for name in SERVER_SETTINGS}


def run_case(url: str, env: dict, schedulers: int, shape: dict) -> dict:
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
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(
            "TRUNCATE schedules_run, schedules_schedule, schedules_schedulerinstance CASCADE"
        )
    from schedules.models import Schedule

    Schedule.objects.bulk_create(rows, batch_size=1000)
    processes = [
        subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "runscheduler"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for _ in range(schedulers)
    ]
    ends = burst_at + timedelta(seconds=shape["bursts"] * shape["burst_every"] + 1.0)
    time.sleep(max(0.0, (ends - datetime.now(UTC)).total_seconds()))
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(60)
    with psycopg.connect(url, autocommit=True) as db:
        records = db.execute(
            "SELECT schedule_code, slot, EXTRACT(EPOCH FROM started_at - slot) FROM schedules_run "
            "WHERE reason = 'scheduled' AND started_at IS NOT NULL"
        ).fetchall()
        duplicates = db.execute(
            "SELECT count(*) FROM (SELECT schedule_id, slot FROM schedules_run "
            "GROUP BY schedule_id, slot HAVING count(*) > 1) d"
        ).fetchone()[0]
    windows: list[list[float]] = [[] for _ in range(shape["windows"])]
    bursts: list[list[float]] = [[] for _ in range(shape["bursts"])]
    for code, slot, late in records:
        if code.startswith("b"):
            bursts[int(code[1:].split(".")[0])].append(float(late))
            continue
        index = int((slot - measured).total_seconds() // shape["window"])
        if 0 <= index < shape["windows"]:
            windows[index].append(float(late))
    done = [max(b) if len(b) == BURST else None for b in bursts]
    return {
        "schedulers": schedulers,
        "runs": sum(len(w) for w in windows),
        "expected": round(STEADY / EVERY * shape["windows"] * shape["window"]),
        "p50_ms": summary(percentile(w, 0.5) * 1000 if w else None for w in windows),
        "p99_ms": summary(percentile(w, 0.99) * 1000 if w else None for w in windows),
        "max_ms": summary(max(w) * 1000 if w else None for w in windows),
        "duplicate_slots": duplicates,
        "burst": {
            "started": [len(b) for b in bursts],
            "all_started_s": summary(done),
            "runs_per_s": summary(BURST / d if d else None for d in done),
        },
    }


def main() -> None:
    parser = benchmark_options(__doc__, quick="shorter phases")
    args = parser.parse_args()
    shape = QUICK if args.quick else FULL
    folder = Path(tempfile.mkdtemp(prefix="sillo-bench-pg-"))
    print(f"PostgreSQL: {STEADY} schedules every {EVERY:g}s ({STEADY / EVERY:.0f} runs/s) and "
          f"bursts of {BURST}; {shape}", flush=True)  # fmt: skip
    results = []
    with postgres(durable=True) as server:
        url = server.rsplit("/", 1)[0] + "/sillo_bench"
        with psycopg.connect(server, autocommit=True) as db:
            db.execute("CREATE DATABASE sillo_bench")
            durability = server_settings(db)
        print(f"PostgreSQL {durability}", flush=True)
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "sillo_dash.settings",
               "SILLO_DATA_DIR": str(folder), "DJANGO_LOG_LEVEL": "WARNING"}  # fmt: skip
        env.pop("REDIS_URL", None)
        subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate"], env=env, check=True,
                       capture_output=True)  # fmt: skip
        # This process writes the schedule records through the models, on that database.
        os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE",
                                               "SILLO_DATA_DIR")})  # fmt: skip
        django.setup()
        for count in COUNTS:
            row = run_case(url, env, count, shape)
            results.append(row)
            p99, burst = row["p99_ms"], row["burst"]["all_started_s"]
            print(
                f"{count} scheduler(s): {row['runs']}/{row['expected']} runs, p99 "
                f"{p99['median'] if p99 else float('nan'):.1f} ms, slots run twice "
                f"{row['duplicate_slots']}; bursts started {row['burst']['started']}, the last "
                f"after {burst['median'] if burst else float('nan'):.2f}s",
                flush=True,
            )
    settings = {"steady": STEADY, "every": EVERY, "burst": BURST, "counts": COUNTS,
                "database": "PostgreSQL", "durability": {"PostgreSQL": {"sillo": durability}},
                "shape": shape, "quick": args.quick}  # fmt: skip
    write_results(args.json, "scheduler_postgres", settings, {"cases": results})


if __name__ == "__main__":
    main()
