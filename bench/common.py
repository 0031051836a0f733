"""What every benchmark shares: statistics, the machine, the results file.

Each benchmark script writes one JSON document: {"benchmark", "machine",
"settings", ...its own figures}. `bench/report.py` turns the set into
docs/benchmarks.md. Figures from repeated measurements are summaries:
{"median", "min", "max", "n"}.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from provenance import provenance

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SEED = 20261201  # every random choice in the benchmarks starts here


def benchmark_options(doc: str, quick: str) -> argparse.ArgumentParser:
    """The options bench/run.py passes every benchmark: --quick and --json FILE."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--json", type=Path, help="write the results here")
    return parser


def percentile(values: Iterable[float], q: float) -> float:
    """The q-quantile by the nearest-rank rule (no interpolation between samples)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


def summary(values: Iterable[float | None]) -> dict | None:
    """Median and spread of repeated measurements; None when nothing was measured."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    return {
        "median": statistics.median(present),
        "min": min(present),
        "max": max(present),
        "n": len(present),
    }


def burst_summary(delays: list[list[float]], size: int) -> dict:
    """Bursts of `size` runs due at one instant, from each run's start minus its slot:
    how many started, until the last started (a burst short of `size` has none), until
    the first started (the claim, made ahead of the slot, and the first handoff), and
    the rate of the starts after the first."""
    whole = [sorted(times) for times in delays if len(times) == size]
    return {
        "started": [len(times) for times in delays],
        "all_started_s": summary(max(times) if len(times) == size else None for times in delays),
        "runs_per_s": summary(size / t[-1] if t[-1] > 0 else None for t in whole),
        "first_started_s": summary(t[0] for t in whole),
        "start_rate": summary(
            (size - 1) / (t[-1] - t[0]) if t[-1] > t[0] else None for t in whole
        ),  # fmt: skip
    }


def write_results(path: Path | None, benchmark: str, settings: dict, figures: dict) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    found = provenance(Path(tempfile.gettempdir()))
    document = {"benchmark": benchmark, **found, "settings": settings, **figures}
    path.write_text(json.dumps(document, indent=1, default=str))


def process_memory(pid: int | str = "self") -> dict[str, int]:
    """Resident set size now and at its peak (VmRSS, VmHWM), in bytes."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) * 1024
    return found


def tree_cpu_seconds(pid: int | None = None) -> float:
    """CPU seconds used so far by a process and every live descendant, with the children
    each has reaped: the cost of a system that runs its tasks in worker processes
    counts in full, as a system that runs them in its own process does."""
    root = pid or os.getpid()
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it exited between the listing and the read
            continue
        # The command name may hold spaces and parentheses: fields start after the last ")".
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
        ticks[int(entry.name)] = sum(int(field) for field in fields[11:15])  # utime..cstime
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(ticks.get(member, 0) for member in tree) / os.sysconf("SC_CLK_TCK")


def quantiles(values: list[float], points: int = 200) -> list[float]:
    """A sorted sample reduced to `points` evenly spaced quantiles, for plots."""
    ordered = sorted(values)
    if len(ordered) <= points:
        return ordered
    step = (len(ordered) - 1) / (points - 1)
    return [ordered[round(i * step)] for i in range(points)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, what: str = "daphne") -> None:
    """Until `process` listens on `port` (30 s at most); an error if it exits first."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited at start")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start")
