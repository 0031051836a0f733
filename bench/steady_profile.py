"""A steady load's cost in the scheduler process: CPU, passes, and the database thread.

Not one of `make bench`'s benchmarks: a diagnostic for changing the per-run
path. It writes N interval schedules every E seconds (slots spread evenly, so
N/E runs a second; the benchmark's no-op worker task), runs this project's
scheduler in this process with its defaults (runs in worker processes), and
over a window after a warm-up prints the scheduler process's CPU (the
workers' not included), its passes a second, each kind of database call's
calls a second and CPU a call (on the database thread), and the lateness of
the window's runs (recorded start minus slot).

    python bench/steady_profile.py [--schedules N] [--every E] [--window S]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import resource
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import percentile  # noqa: E402
from scheduler_systems import Plan, run_sillo, worker_schedule_rows  # noqa: E402 (Django)

LEAD = 8.0  # seconds from writing the records to the first slot: the scheduler's start
WARMUP = 2.0


def timed_database_calls(engine) -> dict[str, list[float]]:
    """Each database call's name -> [calls, CPU seconds on the database thread]."""
    calls: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    plain = engine.db_call

    def db_call(fn, kwargs):
        began = time.thread_time()
        try:
            return plain(fn, kwargs)
        finally:
            tally = calls[getattr(fn, "__qualname__", repr(fn))]
            tally[0] += 1
            tally[1] += time.thread_time() - began

    engine.db_call = db_call
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=1_000)
    parser.add_argument("--every", type=float, default=10.0)
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured")
    args = parser.parse_args()
    from schedules.models import Run
    from schedules.scheduler import engine

    first = time.time() + LEAD
    n, every = args.schedules, args.every
    worker_schedule_rows(Plan({f"s{i}": (first + every * i / n, every) for i in range(n)}))
    calls = timed_database_calls(engine)
    schedulers: list = []
    plain_init = engine.Scheduler.__init__

    def noted_init(self, *a, **k) -> None:
        plain_init(self, *a, **k)
        schedulers.append(self)

    engine.Scheduler.__init__ = noted_init
    found: dict = {}

    async def phases(ready: float) -> None:
        await asyncio.sleep(max(0.0, first + WARMUP - time.time()))
        calls.clear()
        before = resource.getrusage(resource.RUSAGE_SELF)
        passes, began = schedulers[0].passes, time.time()
        await asyncio.sleep(args.window)
        after, took = resource.getrusage(resource.RUSAGE_SELF), time.time() - began
        found.update(
            began=began, took=took, passes=(schedulers[0].passes - passes) / took,
            user=(after.ru_utime - before.ru_utime) / took,
            system=(after.ru_stime - before.ru_stime) / took,
            calls={k: (v[0] / took, v[1] / v[0]) for k, v in calls.items()},
        )  # fmt: skip
        await asyncio.sleep(1.0)  # the window's last runs start

    asyncio.run(run_sillo(Plan({}), phases))
    start = datetime.fromtimestamp(found["began"], UTC)
    end = datetime.fromtimestamp(found["began"] + found["took"], UTC)
    late = [
        (started - slot).total_seconds() * 1000
        for slot, started in Run.objects.filter(slot__gte=start, slot__lt=end).values_list(
            "slot", "started_at"
        )
        if started is not None
    ]
    rate = n / every
    cpu = found["user"] + found["system"]
    print(f"{n} schedules every {every:g} s ({rate:g} runs/s), a window of {found['took']:.1f} s")
    print(
        f"scheduler process: {cpu:.0%} of a core (user {found['user']:.0%}, system "
        f"{found['system']:.0%}), {cpu / rate * 1000:.2f} ms a run; "
        f"{found['passes']:.1f} passes a second"
    )
    for name, (per_second, cost) in sorted(
        found["calls"].items(), key=lambda item: -item[1][0] * item[1][1]
    ):
        print(f"  {name:28} {per_second:7.1f} calls/s {cost * 1000:6.2f} ms CPU a call")
    if late:
        print(
            f"runs {len(late)} of {round(rate * found['took'])}: lateness p50 "
            f"{percentile(late, 0.5):.1f} ms, p99 {percentile(late, 0.99):.1f} ms, "
            f"max {max(late):.1f} ms"
        )


if __name__ == "__main__":
    main()
