"""The cost of isolation: per-run time of a no-op task in a worker process vs inline.

Each mode runs the same declared no-op task (sync and async) through the
scheduler's executor, one run after another, as the loop does: the whole
pipeline (logging, retry, timeout middleware) plus, in process mode, handing
the run to a warm worker and reading its reply. Workers are started before
timing; their start-up (a fork of the set-up fork server) is reported apart.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
os.environ.setdefault("SILLO_DATA_DIR", "/tmp/sillo-bench-isolation")
os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")

import django  # noqa: E402
from common import benchmark_options, percentile, summary, write_results  # noqa: E402

RUNS = {"quick": 300, "full": 3000}
REPEATS = {"quick": 3, "full": 5}


def context():
    from schedules.scheduler.pipeline import RunContext

    return RunContext(
        run_id=0, schedule_id=None, schedule_code="bench", task_name="", kwargs={},
        attempt=1, max_attempts=1, retry_delay=1, max_retry_delay=1, timeout=60,
        reason="scheduled", slot=None,
    )  # fmt: skip


async def per_run_us(executor, declaration, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        outcome = await executor.execute(declaration, context())
        times.append((time.perf_counter() - began) * 1e6)
        assert outcome.status == "succeeded", outcome
    return times


async def measure(runs: int, repeats: int) -> dict:
    from schedules.registry import registry
    from schedules.scheduler.executor import Executor, default_pool

    pool = default_pool()
    began = time.perf_counter()
    await pool.start()
    await pool.run("bench.noop_sync", {}, result_limit=100)  # the fork server is up
    first_worker_s = time.perf_counter() - began
    began = time.perf_counter()
    worker = await pool.acquire()  # a new worker once the server is up (the spare is idle)
    pool.release(worker)
    in_process = Executor(pool=pool, sync_workers=8)
    inline = Executor(pool=None, sync_workers=8)
    figures: dict = {"worker_start_s": {"first": first_worker_s}}
    for kind in ("sync", "async"):
        declaration = registry.get(f"bench.noop_{kind}")
        for mode, executor, decl in (
            ("process", in_process, declaration),
            ("inline", inline, replace(declaration, isolation="inline")),
        ):
            await per_run_us(executor, decl, 50)  # warm-up
            medians, p99s = [], []
            for _ in range(repeats):
                times = await per_run_us(executor, decl, runs)
                medians.append(percentile(times, 0.5))
                p99s.append(percentile(times, 0.99))
            figures[f"{mode}-{kind}"] = {"p50_us": summary(medians), "p99_us": summary(p99s)}
    await in_process.shutdown()
    await inline.shutdown()
    return figures


def main() -> None:
    parser = benchmark_options(__doc__, quick="fewer runs")
    args = parser.parse_args()
    django.setup()
    size = "quick" if args.quick else "full"
    figures = asyncio.run(measure(RUNS[size], REPEATS[size]))
    for name, row in figures.items():
        if name != "worker_start_s":
            print(
                f"{name:14} per run p50 {row['p50_us']['median']:8.1f} us, "
                f"p99 {row['p99_us']['median']:8.1f} us"
            )
    print(f"first worker ready after {figures['worker_start_s']['first']:.2f} s")
    settings = {"runs": RUNS[size], "repeats": REPEATS[size], "quick": args.quick}
    write_results(args.json, "isolation", settings, figures)


if __name__ == "__main__":
    main()
