"""Several schedulers on PostgreSQL: throughput and lateness with 1, 2 and 4 processes.

Starts a throwaway PostgreSQL (as the test suite does), creates the schedules,
runs N `manage.py runscheduler` processes side by side for a window, stops
them with SIGTERM, and reads lateness (start minus slot) and throughput from
the run records. Not a test: nothing here asserts.

    python bench/scheduler_postgres.py [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.production_profile import postgres  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def manage(env: dict, *args: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], env=env, check=True,
                   capture_output=True)  # fmt: skip


def run_case(
    url: str,
    env: dict,
    schedulers: int,
    schedules: int,
    every: float,
    window: float,
    burst: bool = False,
) -> dict:
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(
            "TRUNCATE schedules_run, schedules_schedule, schedules_schedulerinstance CASCADE"
        )
        start = datetime.now(UTC) + timedelta(seconds=5)
        rows = []
        for i in range(schedules):
            anchor = start if burst else start + timedelta(seconds=every * i / schedules)
            spec = {"kind": "interval", "every": every, "jitter": 0.0,
                    "anchor": anchor.isoformat(), "seed": f"b{i}"}  # fmt: skip
            rows.append((f"b{i}", "demo.heartbeat", json.dumps(spec), anchor))
        with db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO schedules_schedule (code, task_name, kwargs, trigger, tz, status, "
                "source, timeout, max_attempts, retry_delay, max_instances, overlap, misfire, "
                "misfire_grace, priority, dispatch, next_run_at, last_outcome, last_error, "
                "run_count, error_count, created_at, updated_at) VALUES (%s, %s, '{}', %s, 'UTC', "
                "'active', 'operator', NULL, 1, 10, 1, 'skip', 'skip', 3600, 0, 'inline', %s, '', "
                "'', 0, 0, now(), now())",
                rows,
            )
    processes = [
        subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "runscheduler"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for _ in range(schedulers)
    ]
    time.sleep(5 + window)
    for process in processes:
        process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(60)
    measured_from = start + timedelta(seconds=2)
    measured_to = start + timedelta(seconds=window)
    with psycopg.connect(url, autocommit=True) as db:
        records = db.execute(
            "SELECT EXTRACT(EPOCH FROM started_at - slot), status FROM schedules_run "
            "WHERE slot >= %s AND slot < %s AND reason = 'scheduled'",
            (measured_from, measured_to),
        ).fetchall()
        duplicates = db.execute(
            "SELECT count(*) FROM (SELECT schedule_id, slot FROM schedules_run "
            "GROUP BY schedule_id, slot HAVING count(*) > 1) d"
        ).fetchone()[0]
    late = [float(seconds) for seconds, status in records if seconds is not None]
    if burst:
        with psycopg.connect(url, autocommit=True) as db:
            started, last = db.execute(
                "SELECT count(*), EXTRACT(EPOCH FROM max(started_at) - %s) FROM schedules_run",
                (start,),
            ).fetchone()
        last = float(last or 0)
        return {
            "schedulers": schedulers,
            "started": started,
            "all_started_s": last,
            "runs_per_s": started / last if last else float("nan"),
        }
    expected = schedules * (window - 2) / every
    return {
        "schedulers": schedulers,
        "runs": len(records),
        "expected": round(expected),
        "runs_per_s": len(records) / (window - 2),
        "p50_ms": percentile(late, 0.5) * 1000,
        "p99_ms": percentile(late, 0.99) * 1000,
        "max_ms": max(late) * 1000 if late else float("nan"),
        "skipped": sum(1 for _, status in records if status == "skipped"),
        "duplicate_slots": duplicates,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    window = 15.0 if args.quick else 40.0
    schedules, every = 2000, 10.0
    folder = Path(tempfile.mkdtemp(prefix="sillo-bench-pg-"))
    print(
        f"PostgreSQL, {schedules} schedules every {every:g}s ({schedules / every:.0f} runs/s), "
        f"{window:.0f}s window; Python {platform.python_version()}, {os.cpu_count()} CPUs"
    )
    results = []
    with postgres() as server:
        url = server.rsplit("/", 1)[0] + "/sillo_bench"
        with psycopg.connect(server, autocommit=True) as db:
            db.execute("CREATE DATABASE sillo_bench")
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "sillo_dash.settings",
               "SILLO_DATA_DIR": str(folder), "DJANGO_LOG_LEVEL": "WARNING"}  # fmt: skip
        env.pop("REDIS_URL", None)
        manage(env, "migrate")
        for n in (1, 2, 4):
            results.append(run_case(url, env, n, schedules, every, window))
            row = results[-1]
            print(
                f"{n} scheduler(s): {row['runs']}/{row['expected']} runs, "
                f"{row['runs_per_s']:.0f}/s, lateness p50 {row['p50_ms']:.1f} ms, "
                f"p99 {row['p99_ms']:.1f} ms, max {row['max_ms']:.1f} ms, "
                f"skipped {row['skipped']}, slots run twice {row['duplicate_slots']}"
            )
        print(f"burst: {schedules} schedules due at the same instant")
        for n in (1, 2, 4):
            row = run_case(url, env, n, schedules, 3600.0, 8.0, burst=True)
            results.append({"burst": True, **row})
            print(
                f"{n} scheduler(s): {row['started']} started, the last after "
                f"{row['all_started_s']:.2f}s ({row['runs_per_s']:.0f} runs/s)"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
