"""Sustained ceiling: the steady rate at which p99 lateness passes 100 ms.

One scheduler on SQLite with its default settings (runs in worker processes,
the benchmark's no-op worker task), as bench/scheduler.py runs it. Schedules
fire every 10 s, their slots spread evenly, so N schedules fall due N/10 times
a second. The rate doubles from 100 a second; each step is a fresh process over
fresh records, measured after a warm-up over one window: lateness inside the
task (the time since its slot, as in the scheduler benchmark) and how many of
the window's slots ran. A step holds if its p99 is under 100 ms and every slot
ran; the ramp stops at the first step that does not, and one more step is
measured between it and the last that held (×1.4). The knee is the highest
rate that held. PostgreSQL and several schedulers are not ramped here (yet).

    python bench/ceiling.py [--quick] [--json FILE]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import benchmark_options, percentile, write_results  # noqa: E402
from scheduler_systems import (  # noqa: E402
    WORKDIR,
    Plan,
    setup_seconds,
    sillo_until,
    worker_schedule_rows,
)

EVERY = 10.0
FIRST_RATE = 100.0
MAX_RATE = 6_400.0
LATE_MS = 100.0
# A quick ramp starts at 800 runs/s: each step below it costs about 9 s, and this
# machine's knee lies well above them (400 and 800 both held, p99 under 6 ms).
SHAPE = {
    "quick": {"warmup": 1.5, "window": 2.0, "first_rate": 800.0},
    "full": {"warmup": 3.0, "window": 10.0, "first_rate": FIRST_RATE},
}


def anchors(n: int, first: float) -> list[float]:
    return [first + EVERY * i / n for i in range(n)]


def one_rate(rate: float, shape: dict) -> dict:
    n = round(rate * EVERY)
    first = time.time() + setup_seconds("sillo", n)
    plan = Plan({f"s{i}": (at, EVERY) for i, at in enumerate(anchors(n, first))})
    worker_schedule_rows(plan)
    begin = first + shape["warmup"]
    end = begin + shape["window"]
    report = WORKDIR / "ceiling.json"
    subprocess.run([sys.executable, __file__, "--child", str(end + 1.0), str(report)], check=True)
    raw = json.loads(report.read_text())
    late = []
    for code, at in raw["executions"]:
        anchor = first + EVERY * int(code[1:]) / n
        slot = anchor + ((at - anchor) // EVERY) * EVERY
        if begin <= slot < end:
            late.append((at - slot) * 1000)
    expected = round(rate * shape["window"])
    p99 = percentile(late, 0.99) if late else None
    return {
        "rate": rate,
        "schedules": n,
        "ready_late_s": max(0.0, raw["ready"] - begin),
        "runs": len(late),
        "expected": expected,
        "p50_ms": percentile(late, 0.5) if late else None,
        "p99_ms": p99,
        "max_ms": max(late) if late else None,
        "held": p99 is not None and p99 < LATE_MS and len(late) >= expected,
    }


def main() -> None:
    parser = benchmark_options(__doc__, quick="shorter windows")
    parser.add_argument("--child", nargs=2, help="internal")
    args = parser.parse_args()
    if args.child:
        Path(args.child[1]).write_text(json.dumps(sillo_until(float(args.child[0]))))
        return
    shape = SHAPE["quick" if args.quick else "full"]
    steps, rate = [], shape["first_rate"]
    while rate <= MAX_RATE:
        steps.append(step := one_rate(rate, shape))
        if not step["held"]:
            break
        rate *= 2
    if len(steps) > 1 and not steps[-1]["held"]:
        # One step between the last that held and the first that did not (×1.4).
        steps.insert(-1, one_rate(round(steps[-2]["rate"] * 2**0.5, -1), shape))
    for step in steps:
        print(
            f"{step['rate']:6.0f}/s {step['schedules']:>6} schedules: {step['runs']}/"
            f"{step['expected']} ran, p99 {step['p99_ms'] or float('nan'):.1f} ms, "
            f"{'held' if step['held'] else 'passed the limit'}",
            flush=True,
        )
    settings = {
        "every_s": EVERY, "first_rate": shape["first_rate"], "max_rate": MAX_RATE,
        "late_ms": LATE_MS,
        "shape": shape, "quick": args.quick, "database": "SQLite", "schedulers": 1,
        "mode": "process (the default)",
    }  # fmt: skip
    write_results(args.json, "ceiling", settings, {"steps": steps})


if __name__ == "__main__":
    main()
