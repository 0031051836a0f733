"""Scheduler benchmark: lateness, dispatch throughput, idle CPU and memory, side by side.

The systems (bench/scheduler_systems.py), on the same machine and workload of
no-op async tasks: this project's scheduler on SQLite; APScheduler 3's
AsyncIOScheduler with its memory job store, and with its SQLAlchemy job store
on the same SQLite file; a naive baseline that wakes every second and
reads every schedule record; and a fair simple peer that wakes every second
and reads only the due records through an index (`next_run_at <= now`).

Each (system, n) run starts a fresh process over records this process wrote,
holding n steady schedules plus 1,000 burst schedules, and goes through:

1. idle: nothing is due; resident memory at the end (growth over the process
   before the system started) and, at 10,000 schedules, CPU share per window
   (full run: windows longer than the scheduler's 30 s resync, so that its
   periodic work is in each);
2. steady: the n schedules fire 100 times a second in all, slots spread evenly
   (the same rate at every n, so the figures show what the number of schedules
   costs); after a warm-up, lateness per window, each window a repetition, and
   the CPU time of the process and its worker processes per run started;
3. bursts: the 1,000 burst schedules fall due at the same instant, several
   times; seconds until the last of each burst started, each a repetition.

Lateness is measured the same way for every system: inside the task, the time
since the slot it ran for. Not a test: nothing here asserts.

    python bench/scheduler.py [--quick] [--json FILE] [--sizes N,..] [--systems S,..]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    benchmark_options,
    burst_summary,
    percentile,
    process_memory,
    quantiles,
    summary,
    tree_cpu_seconds,
    write_results,
)
from django.db import connection  # noqa: E402
from scheduler_systems import (  # noqa: E402
    DURABILITY,
    SYSTEMS,
    WORKDIR,
    Plan,
    executions,
    setup_seconds,
)

RATE = 100.0  # steady runs per second, whatever the number of schedules
BURST = 1_000  # schedules due at the same instant in each burst
SIZES = (1_000, 10_000, 100_000)
# A quick run measures the sizes the targets name (memory per schedule is then
# the growth between them): 1,000 cost a quick run about 35 s.
QUICK_SIZES = (10_000, 100_000)
BURST_TAIL = 6.0  # seconds after the last burst's slot to wait for its last run


@dataclass(frozen=True)
class Shape:
    """How long each phase lasts; quick and full differ only here."""

    idle_windows: int
    idle_window: float
    warmup: float
    windows: int
    window: float
    bursts: int
    burst_every: float
    idle_at: tuple[int, ...] = (10_000,)  # the sizes whose idle CPU is measured
    idle_systems: tuple[str, ...] | None = None  # the systems it is measured for (None: all)


# One burst per size in a quick run (two in all for each system measured at both):
# each more cost a quick run 12 s (item 10: five minutes).
# Quick mode measures idle CPU for Sillo Dash only (the target's); the full run measures
# every system's (each cost a quick run about 15 s).
QUICK = Shape(idle_windows=1, idle_window=2.5, warmup=0.5, windows=2, window=1.0, bursts=1,
              burst_every=1.5, idle_systems=("sillo",))  # fmt: skip
FULL = Shape(idle_windows=2, idle_window=31.0, warmup=2.0, windows=5, window=4.0, bursts=4,
             burst_every=3.0)  # fmt: skip


@dataclass(frozen=True)
class Timeline:
    """Where one run's slots lie, in epoch seconds, and what they are."""

    n: int
    first: float  # the first steady slot; the idle phase ends here
    burst_at: float
    shape: Shape

    @property
    def every(self) -> float:
        return self.n / RATE

    @property
    def ends(self) -> float:
        return self.burst_at + self.shape.bursts * self.shape.burst_every

    def plan(self) -> Plan:
        slots = {f"s{i}": (self.first + i * self.every / self.n, self.every) for i in range(self.n)}
        # Each burst has its own schedules, so a late run is never taken for the next burst's.
        for k in range(self.shape.bursts):
            at = self.burst_at + k * self.shape.burst_every
            slots.update({f"b{k}.{i}": (at, 86400.0) for i in range(BURST)})
        return Plan(slots)


# Quick mode runs the fair simple peer, the indexed poll, at one size only (where
# lateness is compared): its figures at the other sizes follow from its design (a
# one-second poll does not grow with the table), and it kept QUICK=1 over five minutes.
QUICK_ONLY_AT = {"poll": 10_000}
# Nor does it run the naive full scan (the indexed poll is the simple peer a target
# names; the full run has the scan at every size) or Sillo Dash's inline mode, the
# reference for the cost of isolation: its per-run cost is measured apart
# (bench/isolation.py), and the full run has it at every size.
QUICK_SKIP = {"sillo-inline", "naive"}


def timeline_for(system: str, n: int, shape: Shape) -> Timeline:
    """The first steady slot comes after setup, the child's start and the idle phase."""
    schedules = n + shape.bursts * BURST
    setup = setup_seconds(system, schedules)
    idle = 0.5 + (shape.idle_windows * shape.idle_window if measures_idle(system, n, shape)
                  else 0.0)  # fmt: skip
    first = time.time() + setup + idle
    burst_at = first + shape.warmup + shape.windows * shape.window + 0.5
    return Timeline(n, first, burst_at, shape)


def shape_from(fields: dict) -> Shape:
    """A Shape read back from JSON, where its tuples became lists."""
    systems = fields["idle_systems"]
    return Shape(**{**fields, "idle_at": tuple(fields["idle_at"]),
                    "idle_systems": None if systems is None else tuple(systems)})  # fmt: skip


def measures_idle(system: str, n: int, shape: Shape) -> bool:
    return n in shape.idle_at and (shape.idle_systems is None or system in shape.idle_systems)


# ---------------------------------------------------------------- in the child


def child(system: str, timeline: Timeline) -> dict:
    """Run one system over its prepared records through the phases; report raw figures."""
    plan = timeline.plan()
    durability = DURABILITY[system]()
    connection.close()  # the system opens its own
    gc.collect()
    before = process_memory()["VmRSS"]
    found: dict = {"rss_before": before, "durability": durability}

    async def phases(ready: float) -> None:
        found["ready"] = ready
        await asyncio.sleep(0.5)  # the idle phase's warm-up
        shares = []
        if measures_idle(system, timeline.n, timeline.shape):  # they share what is left
            count = timeline.shape.idle_windows
            window = (timeline.first - 0.2 - time.time()) / count
            for _ in range(count if window >= 0.5 else 0):
                cpu, began = time.process_time(), time.monotonic()
                await asyncio.sleep(window)
                shares.append(100 * (time.process_time() - cpu) / (time.monotonic() - began))
        found["idle_cpu_percent"] = shares
        found["rss_idle"] = process_memory()["VmRSS"]
        found["steady_cpu"] = await steady_cpu(timeline, measure_from(timeline, ready))
        await asyncio.sleep(max(0.0, timeline.ends + 0.5 - time.time()))
        # A system slower than the bursts gets a few more seconds to start them all.
        bursts = timeline.shape.bursts * BURST
        while time.time() < timeline.ends + BURST_TAIL:
            if sum(1 for code, _ in executions if code[0] == "b") >= bursts:
                break
            await asyncio.sleep(0.1)

    asyncio.run(SYSTEMS[system][1](plan, phases))
    found["peak_rss"] = process_memory()["VmHWM"]
    found["executions"] = list(executions)  # with the workers' executions
    return found


async def steady_cpu(timeline: Timeline, start: float) -> list[list[float]]:
    """CPU seconds of the process and its workers in each steady window: (from, to, CPU s).

    The windows follow each other: one reading (a scan of /proc, 1 to 3 ms on the
    system's own event loop) ends a window and begins the next."""
    windows = steady_windows(timeline, start)
    if not windows:
        return []
    await asyncio.sleep(max(0.0, windows[0][0] - time.time()))
    cpu, began = tree_cpu_seconds(), time.time()
    found = []
    for _, end in windows:
        await asyncio.sleep(max(0.0, end - time.time()))
        now_cpu, now = tree_cpu_seconds(), time.time()
        found.append([began, now, now_cpu - cpu])
        cpu, began = now_cpu, now
    return found


# ---------------------------------------------------------------- figures


def measure_from(timeline: Timeline, ready: float) -> float:
    """The steady windows start after the warm-up, counted from the first slot or, for a
    system ready only after it, from when it was."""
    return max(timeline.first, ready) + timeline.shape.warmup


def steady_windows(timeline: Timeline, start: float) -> list[tuple[float, float]]:
    """The windows lateness and CPU are measured over; a late setup shifts them, and
    none may reach into the bursts."""
    shape = timeline.shape
    fit = int((timeline.burst_at - 0.25 - start) // shape.window)
    return [(start + k * shape.window, start + (k + 1) * shape.window)
            for k in range(max(0, min(shape.windows, fit)))]  # fmt: skip


def slot_of(anchor: float, every: float, at: float) -> float:
    return anchor + ((at - anchor) // every) * every


def steady_figures(timeline: Timeline, runs: list, start: float) -> dict:
    """Lateness per window (each a repetition), and how many slots ran."""
    shape = timeline.shape
    windows: list[list[float]] = [[] for _ in steady_windows(timeline, start)]
    every = timeline.every
    for code, at in runs:
        if code[0] != "s":
            continue
        anchor = timeline.first + int(code[1:]) * every / timeline.n
        slot = slot_of(anchor, every, at)
        index = int((slot - start) // shape.window)
        if 0 <= index < len(windows):
            windows[index].append(at - slot)
    pooled = [late for window in windows for late in window]
    return {
        "runs": len(pooled),
        "expected": round(RATE * shape.window * len(windows)),
        "p50_ms": summary(percentile(w, 0.50) * 1000 if w else None for w in windows),
        "p99_ms": summary(percentile(w, 0.99) * 1000 if w else None for w in windows),
        "max_ms": summary(max(w) * 1000 if w else None for w in windows),
        "late_ms_quantiles": [x * 1000 for x in quantiles(pooled)],
    }


def cpu_figures(windows: list[list[float]], runs: list) -> dict:
    """CPU per run started in each steady window (milliseconds), and the share of a core."""
    per_run, share = [], []
    for began, ended, cpu in windows:
        started = sum(1 for code, at in runs if code[0] == "s" and began <= at < ended)
        per_run.append(1000 * cpu / started if started else None)
        share.append(100 * cpu / (ended - began))
    return {"ms_per_run": summary(per_run), "percent_of_core": summary(share)}


def burst_figures(timeline: Timeline, runs: list) -> dict:
    """For each burst: seconds from its slot until its runs started (common.burst_summary)."""
    shape = timeline.shape
    delays: list[list[float]] = [[] for _ in range(shape.bursts)]
    for code, at in runs:
        if code[0] == "b":
            index = int(code[1:].split(".")[0])
            delays[index].append(at - (timeline.burst_at + index * shape.burst_every))
    return burst_summary(delays, BURST)


def one_run(system: str, n: int, shape: Shape) -> dict:
    timeline = timeline_for(system, n, shape)
    prepare = SYSTEMS[system][0]
    # The previous system's workers noted their executions in this file: not this one's.
    Path(os.environ["SILLO_BENCH_EXECUTIONS"]).unlink(missing_ok=True)
    prepare(timeline.plan())
    report = WORKDIR / "child.json"
    subprocess.run(
        [sys.executable, __file__, "--child", system, json.dumps(asdict(timeline)), str(report)],
        check=True,
    )
    raw = json.loads(report.read_text())
    start = measure_from(timeline, raw["ready"])
    return {
        "setup_overran_s": max(0.0, raw["ready"] - timeline.first),
        # How much of its allowance a system left (setup_seconds's room, for tuning it).
        "ready_early_s": timeline.first - raw["ready"],
        "durability": raw["durability"],
        "idle_cpu_percent": summary(raw["idle_cpu_percent"]),
        "rss_growth_bytes": raw["rss_idle"] - raw["rss_before"],
        "peak_rss_mb": raw["peak_rss"] / 2**20,
        "peak_growth_mb": (raw["peak_rss"] - raw["rss_before"]) / 2**20,
        **steady_figures(timeline, raw["executions"], start),
        "steady_cpu": cpu_figures(raw["steady_cpu"], raw["executions"]),
        "burst": burst_figures(timeline, raw["executions"]),
    }


def memory_per_schedule(by_size: dict) -> dict:
    """Per schedule: the growth between the smallest and largest runs, over the difference.

    What a system holds whatever its size (threads, connections, imports)
    cancels out; what each schedule costs remains.
    """
    small, large = min(by_size), max(by_size)
    out = {}
    for system in by_size[large]:
        if system not in by_size[small]:
            continue
        grown = (
            by_size[large][system]["rss_growth_bytes"] - by_size[small][system]["rss_growth_bytes"]
        )
        out[system] = {"bytes_per_schedule": grown / (large - small), "between": [small, large]}
    return out


def line(n: int, system: str, row: dict) -> str:
    def median(figure: dict | None, scale: str = "{:.1f}") -> str:
        return scale.format(figure["median"]) if figure else "-"

    burst = row["burst"]
    return (
        f"{n:>7} {system:24} runs {row['runs']}/{row['expected']}, "
        f"p50 {median(row['p50_ms'])} ms, p99 {median(row['p99_ms'])} ms, "
        f"max {median(row['max_ms'])} ms; CPU "
        f"{median(row['steady_cpu']['ms_per_run'], '{:.2f}')} ms a run; burst all started after "
        f"{median(burst['all_started_s'], '{:.3f}')} s; idle CPU "
        f"{median(row['idle_cpu_percent'], '{:.2f}')}%; "
        f"RSS +{row['rss_growth_bytes'] / 2**20:.1f} MB; ready {row['ready_early_s']:.1f} s "
        "before its first slot"
    )


def main() -> None:
    parser = benchmark_options(__doc__, quick="shorter phases")
    parser.add_argument("--sizes", help="schedule counts (default: 1000,10000,100000; quick: "
                        "10000,100000)")  # fmt: skip
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="systems to run")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        system, timeline, report = args.child
        fields = json.loads(timeline)
        fields["shape"] = shape_from(fields["shape"])
        Path(report).write_text(json.dumps(child(system, Timeline(**fields))))
        return

    shape = QUICK if args.quick else FULL
    sizes = [int(n) for n in args.sizes.split(",")] if args.sizes else (
        list(QUICK_SIZES if args.quick else SIZES))  # fmt: skip
    systems = [s for s in args.systems.split(",") if not (args.quick and s in QUICK_SKIP)]
    print(f"scheduler: {RATE:.0f} runs/s steady and bursts of {BURST}; {shape}", flush=True)
    load: dict = {}
    for n in sizes:
        load[n] = {}
        for system in systems:
            if args.quick and system in QUICK_ONLY_AT and n != QUICK_ONLY_AT[system]:
                continue
            load[n][system] = one_run(system, n, shape)
            print(line(n, system, load[n][system]), flush=True)
    # As read back in each system's process; the same at every size.
    durability = {system: next(load[n][system] for n in sizes if system in load[n])["durability"]
                  for system in systems}  # fmt: skip
    settings = {"rate": RATE, "burst": BURST, "sizes": sizes, "systems": systems,
                "database": "SQLite", "durability": {"SQLite": durability},
                "shape": asdict(shape), "quick": args.quick}  # fmt: skip
    figures = {"load": load, "memory": memory_per_schedule(load) if len(sizes) > 1 else {}}
    write_results(args.json, "scheduler", settings, figures)


if __name__ == "__main__":
    main()
