"""The claim path alone: what a restart's catch-up costs per schedule, and where.

Not one of `make bench`'s benchmarks (no peer does this work, so there is no
ratio to report): a diagnostic for changing the claim path. It writes the
records `bench/restart.py` writes (N one-minute schedules a day behind, one
misfire policy), then calls the scheduler's `claim_due` in a loop, as the
engine's passes do (batches of `SILLO_CLAIM_BATCH`, the slots a day late, the
scheduler up since now), until nothing is due, in this one process: no
workers, no runs executing, no other pass competing. It prints the time per
schedule; with `--profile`, cProfile's top functions by cumulative time.

With `--steady`, the claim of a steady load instead: N schedules every 100 s
(slots spread evenly, 100 runs a second at 10,000), claimed as the engine's
passes claim them (a pass every 54 ms of the records' time, slots up to 50 ms
ahead, the scheduler up since before the first); it prints the CPU of a claim
(this thread's), least and median of six sets of 100 claims, so that a change
to the per-run path is read beside the commit before it without a scheduler's
other threads and workers in the figure.

    python bench/claim_profile.py [--policy skip|once] [--size N] [--profile [N]]
    python bench/claim_profile.py --steady [--size N] [--profile [N]]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from restart import DOWN, EVERY, prepare  # noqa: E402 (sets Django up)


def claim_until_caught_up() -> int:
    """Claim passes until none claims anything; returns how many claimed some."""
    from schedules.conf import setting
    from schedules.registry import registry
    from schedules.scheduler.claims import claim_due

    now = datetime.now(UTC)
    passes = 0
    while True:
        runs, _ = claim_due(
            now=now,
            instance_id="claim-profile",
            tasks=registry,
            limit=setting("SILLO_CLAIM_BATCH"),
            max_catch_up=setting("SILLO_MAX_CATCH_UP"),
            local_in_flight={},
            up_since=now,
        )
        if not runs:
            return passes
        passes += 1


STEADY_EVERY = 100.0
STEADY_PASS = 0.054  # seconds between a steady load's passes (bench/steady_profile.py: 18.5/s)
STEADY_AHEAD = 0.05  # SILLO_CLAIM_AHEAD


def steady_claims(size: int, profiler: cProfile.Profile | None) -> list[float]:
    """CPU seconds a claim, for each of six sets of 100 steady claims (after 50 unmeasured)."""
    from datetime import timedelta

    from scheduler_systems import Plan, worker_schedule_rows

    from schedules.registry import registry
    from schedules.scheduler.claims import claim_due

    first = time.time() + 5.0
    slots = {f"s{i}": (first + STEADY_EVERY * i / size, STEADY_EVERY) for i in range(size)}
    worker_schedule_rows(Plan(slots))
    up_since = datetime.fromtimestamp(first - 1.0, UTC)
    now = datetime.fromtimestamp(first, UTC)

    def claim() -> None:
        nonlocal now
        now += timedelta(seconds=STEADY_PASS)
        claim_due(
            now=now, due_by=now + timedelta(seconds=STEADY_AHEAD), up_since=up_since,
            instance_id="claim-profile", tasks=registry, limit=500, max_catch_up=100,
            local_in_flight={},
        )  # fmt: skip

    for _ in range(50):
        claim()
    sets = []
    if profiler:
        profiler.enable()
    for _ in range(6):
        began = time.thread_time()
        for _ in range(100):
            claim()
        sets.append((time.thread_time() - began) / 100)
    if profiler:
        profiler.disable()
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", choices=("skip", "once"), default="skip")
    parser.add_argument("--size", type=int, help="schedules (default 20,000; steady: 10,000)")
    parser.add_argument("--profile", type=int, nargs="?", const=40, help="print N functions")
    parser.add_argument("--steady", action="store_true", help="a steady load's claims")
    args = parser.parse_args()
    from schedules.models import Run

    if args.steady:
        size = args.size or 10_000
        profiler = cProfile.Profile() if args.profile else None
        sets = sorted(steady_claims(size, profiler))
        median = statistics.median(sets)
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
        rate = size / STEADY_EVERY
        print(
            f"steady: {size} schedules every {STEADY_EVERY:g} s, "
            f"{rate * STEADY_PASS:.1f} slots a claim: {sets[0] * 1e3:.2f} ms CPU a claim "
            f"(least), {median * 1e3:.2f} (median){', profiled' if profiler else ''}"
        )
        return

    size = args.size or 20_000
    prepare(args.policy, size, time.time() - DOWN - EVERY)
    profiler = cProfile.Profile() if args.profile else None
    began = time.perf_counter()
    if profiler:
        profiler.enable()
    passes = claim_until_caught_up()
    if profiler:
        profiler.disable()
    took = time.perf_counter() - began
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
    print(
        f"{args.policy}: {size} schedules caught up in {took:.2f} s "
        f"({took / size * 1e6:.0f} µs a schedule{', profiled' if profiler else ''}), "
        f"{passes} passes, {Run.objects.count()} runs written"
    )


if __name__ == "__main__":
    main()
