"""Restart after a day of downtime: every one-minute schedule a day behind at once.

N one-minute interval schedules (their slots spread evenly over the minute,
the product's default `misfire_grace` of 60 s and `max_instances` of 1) whose
records say their next slot was a day ago, as after a day with no scheduler
running. Then this project's scheduler starts with its default settings (runs
in worker processes; the benchmark's no-op worker task) and runs until every
schedule has been caught up, and a window more. Once per misfire policy,
each in a fresh process over fresh records. Measured from the records:

- first pass: seconds from the scheduler being ready (workers up, instance
  registered) until no schedule is behind any more (each claimed once and
  moved to a slot after the restart);
- current slots: the slots that fell due after the restart, until 2 s before
  the end: how many ran, their lateness (the run's recorded start minus its
  slot; the body starts a few milliseconds later), and how many the catch-up
  took instead: recorded `skipped` (misfire="skip"), or never given a run of
  their own because their schedule was still behind when they fell due.

`misfire="all"` is not run: it queues `SILLO_MAX_CATCH_UP` (100) runs per
schedule by design, 1,000,000 runs at 10,000 schedules.

Then the catch-up alone: the same number of schedules a day behind, weekly
(`misfire="skip"`), so that no slot falls due while it is measured. Its first
pass is what catching up costs one scheduler with nothing else to do, the
measured reason a first pass can take longer than the limit whatever the load.

    python bench/restart.py [--quick] [--json FILE] [--size N]
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import benchmark_options, percentile, write_results  # noqa: E402
from scheduler_systems import WORKDIR, Plan, run_sillo, worker_schedule_rows  # noqa: E402

POLICIES = ("skip", "once")
EVERY = 60.0
ALONE_EVERY = 7 * 86_400.0  # the catch-up alone: weekly, so nothing falls due meanwhile
DOWN = 86_400.0  # a day
SIZES = {"quick": 5_000, "full": 100_000}  # quick: a check of the path, not the target
WINDOW = {"quick": 2.5, "full": 20.0}  # seconds measured after the catch-up
LIMIT = {"quick": 120.0, "full": 600.0}  # seconds the catch-up may take before giving up
SETTLE = 2.0  # the slots of the last seconds may not have started yet: not counted


def anchors(n: int, base: float) -> list[float]:
    return [base + EVERY * i / n for i in range(n)]


def prepare(policy: str, n: int, base: float, every: float = EVERY) -> None:
    """Schedule records a day behind, with the product's defaults for what a restart reads."""
    from schedules.models import Schedule

    worker_schedule_rows(Plan({f"s{i}": (at, every) for i, at in enumerate(anchors(n, base))}))
    Schedule.objects.update(misfire=policy, misfire_grace=60.0, max_instances=1)


# ---------------------------------------------------------------- in the child


def behind(ready: float) -> bool:
    """Whether a schedule is still a day behind (not claimed since the restart).

    One row's lookup on the due index: a count of every schedule behind, every 50 ms,
    was a third of a core beside the scheduler it measures, early in the catch-up.
    """
    from schedules.models import Schedule

    cutoff = datetime.fromtimestamp(ready - DOWN / 2, UTC)
    return Schedule.objects.filter(status="active", next_run_at__lt=cutoff).exists()


def count_behind(ready: float) -> int:
    from schedules.models import Schedule

    cutoff = datetime.fromtimestamp(ready - DOWN / 2, UTC)
    return Schedule.objects.filter(status="active", next_run_at__lt=cutoff).count()


def child(n: int, base: float, window: float, limit: float, every: float) -> dict:
    found: dict = {}

    async def phases(ready: float) -> None:
        found["ready"] = ready
        while time.time() < ready + limit:
            if not await asyncio.to_thread(behind, ready):
                found["caught_up"] = time.time()
                break
            await asyncio.sleep(0.05)
        found["behind_at_limit"] = await asyncio.to_thread(count_behind, ready)
        await asyncio.sleep(window)
        found["ended"] = time.time()

    asyncio.run(run_sillo(Plan({}), phases))
    found["current"] = current_slots(n, base, found["ready"], found["ended"] - SETTLE, every)
    return found


def current_slots(n: int, base: float, ready: float, until: float, every: float) -> dict:
    """What became of each slot that fell due after the restart, up to `until`."""
    from schedules.models import Run

    start = datetime.fromtimestamp(ready, UTC)
    rows = {
        (code, round(slot.timestamp() * 1000)): (status, started)
        for code, slot, status, started in Run.objects.filter(slot__gte=start).values_list(
            "schedule_code", "slot", "status", "started_at"
        )
    }
    lateness, skipped, missed, waiting = [], 0, 0, 0
    for i, anchor in enumerate(anchors(n, base)):
        slot = anchor + ((ready - anchor) // every + 1) * every  # the first after the restart
        while slot <= until:
            status, started = rows.get((f"s{i}", round(slot * 1000)), (None, None))
            if status is None:
                missed += 1
            elif status == "skipped":
                skipped += 1
            elif started is None:
                waiting += 1
            else:
                lateness.append(started.timestamp() - slot)
            slot += every
    expected = len(lateness) + skipped + missed + waiting
    return {
        "expected": expected,
        "ran": len(lateness),
        "skipped": skipped,
        "missed": missed,
        "not_started": waiting,
        "late_p50_s": percentile(lateness, 0.5) if lateness else None,
        "late_p99_s": percentile(lateness, 0.99) if lateness else None,
        "late_max_s": max(lateness) if lateness else None,
    }


# ---------------------------------------------------------------- parent


def one_policy(policy: str, n: int, window: float, limit: float, every: float = EVERY) -> dict:
    base = time.time() - DOWN - EVERY
    prepare(policy, n, base, every)
    report = WORKDIR / "restart.json"
    arguments = json.dumps([n, base, window, limit, every])
    subprocess.run([sys.executable, __file__, "--child", arguments, str(report)], check=True)
    raw = json.loads(report.read_text())
    caught_up = raw.get("caught_up")
    return {
        "schedules": n,
        "first_pass_s": None if caught_up is None else caught_up - raw["ready"],
        "behind_at_limit": raw["behind_at_limit"],
        "measured_s": raw["ended"] - raw["ready"],
        "current": raw["current"],
    }


def main() -> None:
    parser = benchmark_options(__doc__, quick="5,000 schedules instead of 100,000")
    parser.add_argument("--size", type=int, help="schedules (default: 5,000 quick, 100,000)")
    parser.add_argument("--child", nargs=2, help="internal")
    args = parser.parse_args()
    if args.child:
        n, base, window, limit, every = json.loads(args.child[0])
        Path(args.child[1]).write_text(json.dumps(child(n, base, window, limit, every)))
        return
    mode = "quick" if args.quick else "full"
    n = args.size or SIZES[mode]
    policies = {}
    for policy in POLICIES:
        row = policies[policy] = one_policy(policy, n, WINDOW[mode], LIMIT[mode])
        current, first = row["current"], row["first_pass_s"]
        print(
            f"{policy:5} {n:>7} schedules: first pass "
            f"{'not done' if first is None else f'{first:.1f} s'}; current slots "
            f"{current['ran']}/{current['expected']} ran, max late "
            f"{current['late_max_s'] or 0:.1f} s, {current['skipped']} skipped, "
            f"{current['missed']} missed, {current['not_started']} not started",
            flush=True,
        )
    alone = one_policy("skip", n, 0.0, LIMIT[mode], every=ALONE_EVERY)
    first = alone["first_pass_s"]
    print(
        f"alone {n:>7} schedules: first pass {'not done' if first is None else f'{first:.1f} s'}"
        f"{'' if first is None else f' ({first / n * 1e6:.0f} µs a schedule)'}",
        flush=True,
    )
    settings = {
        "schedules": n, "every_s": EVERY, "down_s": DOWN, "window_s": WINDOW[mode],
        "limit_s": LIMIT[mode], "policies": list(POLICIES), "quick": args.quick,
        "database": "SQLite", "mode": "process (the default)", "alone_every_s": ALONE_EVERY,
    }  # fmt: skip
    write_results(args.json, "restart", settings, {"policies": policies, "alone": alone})


if __name__ == "__main__":
    main()
