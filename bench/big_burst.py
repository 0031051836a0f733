"""A big burst: 10,000 schedules due at the same instant, as at the top of an hour.

One scheduler on SQLite with its default settings (runs in worker processes,
the benchmark's no-op worker task). The schedules fire once a day, all with
their slot at the same instant a few seconds after the scheduler's start;
nothing else is due. Measured inside the task, as the other benchmarks do:
how many of the burst started, and the seconds from the slot until the first
and the last of them started. Each repetition is a fresh process over fresh
records (quick: 1; full: 3).

    python bench/big_burst.py [--quick] [--json FILE]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import benchmark_options, percentile, summary, write_results  # noqa: E402
from scheduler_systems import (  # noqa: E402
    WORKDIR,
    Plan,
    executions,
    setup_seconds,
    sillo_until,
    worker_schedule_rows,
)

SIZE = 10_000
REPEATS = {"quick": 1, "full": 3}
LIMIT = 120.0  # seconds after the slot to wait for the last run before giving up


def one_burst(size: int) -> dict:
    slot = time.time() + setup_seconds("sillo", size) + 1.0
    worker_schedule_rows(Plan({f"b{i}": (slot, 86_400.0) for i in range(size)}))
    report = WORKDIR / "big_burst.json"
    subprocess.run([sys.executable, __file__, "--child", str(slot), str(size), str(report)],
                   check=True)  # fmt: skip
    raw = json.loads(report.read_text())
    starts = sorted(at - slot for _, at in raw["executions"])
    return {
        "started": len(starts),
        "ready_before_slot_s": slot - raw["ready"],
        "first_s": starts[0] if starts else None,
        "half_s": percentile(starts, 0.5) if starts else None,
        "all_started_s": starts[-1] if len(starts) >= size else None,
    }


def main() -> None:
    parser = benchmark_options(__doc__, quick="one repetition")
    parser.add_argument("--child", nargs=3, help="internal")
    args = parser.parse_args()
    if args.child:
        slot, size, out = float(args.child[0]), int(args.child[1]), Path(args.child[2])

        def started_all() -> bool:
            return time.time() > slot and len(executions) >= size

        out.write_text(json.dumps(sillo_until(slot + LIMIT, started_all)))
        return
    repeats = REPEATS["quick" if args.quick else "full"]
    bursts = []
    for _ in range(repeats):
        bursts.append(burst := one_burst(SIZE))
        done = burst["all_started_s"]
        print(
            f"{SIZE:,} due at once: {burst['started']:,} started, the last after "
            f"{'not all' if done is None else f'{done:.2f} s'}",
            flush=True,
        )
    settings = {"size": SIZE, "repeats": repeats, "limit_s": LIMIT, "quick": args.quick,
                "database": "SQLite", "schedulers": 1, "mode": "process (the default)"}  # fmt: skip
    figures = {
        "bursts": bursts,
        "all_started_s": summary(b["all_started_s"] for b in bursts),
        "runs_per_s": summary(
            SIZE / b["all_started_s"] if b["all_started_s"] else None for b in bursts
        ),
    }
    write_results(args.json, "big_burst", settings, figures)


if __name__ == "__main__":
    main()
