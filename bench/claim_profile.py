"""The claim path alone: what a restart's catch-up costs per schedule, and where.

Not one of `make bench`'s benchmarks (no peer does this work, so there is no
ratio to report): a diagnostic for changing the claim path. It writes the
records `bench/restart.py` writes (N one-minute schedules a day behind, one
misfire policy), then calls the scheduler's `claim_due` in a loop, as the
engine's passes do (batches of `SILLO_CLAIM_BATCH`, the slots a day late, the
scheduler up since now), until nothing is due, in this one process: no
workers, no runs executing, no other pass competing. It prints the time per
schedule; with `--profile`, cProfile's top functions by cumulative time.

    python bench/claim_profile.py [--policy skip|once] [--size N] [--profile [N]]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", choices=("skip", "once"), default="skip")
    parser.add_argument("--size", type=int, default=20_000, help="schedules (default 20,000)")
    parser.add_argument("--profile", type=int, nargs="?", const=40, help="print N functions")
    args = parser.parse_args()
    from schedules.models import Run

    prepare(args.policy, args.size, time.time() - DOWN - EVERY)
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
        f"{args.policy}: {args.size} schedules caught up in {took:.2f} s "
        f"({took / args.size * 1e6:.0f} µs a schedule{', profiled' if profiler else ''}), "
        f"{passes} passes, {Run.objects.count()} runs written"
    )


if __name__ == "__main__":
    main()
