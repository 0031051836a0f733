"""One million schedules in the report: its section, reading and target row (item 7)."""

from __future__ import annotations

from formatting import table
from verdicts import not_run_here, verdict

TARGET = (
    "one million schedules: idle CPU under 1% of a core, scheduler memory growth under "
    "256 MB, p99 lateness at 100 runs/s under 100 ms with every slot run, list page and "
    "search under 100 ms server time with a constant number of queries"
)
IDLE_PERCENT = 1.0  # as at 10,000 schedules
MEMORY_MB = 256.0  # a scheduler that keeps no state per schedule stays far below it
LATE_MS = 100.0  # the ceiling's limit
PAGE_MS = 100.0  # item 8's, for every dashboard page


def _figures(data: dict) -> dict:
    """The worst of each figure the target judges; None where nothing was measured."""
    run, pages = data["scheduler"], data["pages"]
    idle, p99 = run["idle_cpu_percent"], run["p99_ms"]
    queries = {row["queries"]["max"] for row in pages.values()}
    list_queries = {pages[name]["queries"]["max"] for name in pages if "page" in name}
    return {
        "idle": idle["max"] if idle else None,
        "memory": run["peak_growth_mb"],
        "p99": p99["max"] if p99 else None,
        "complete": bool(run["expected"]) and run["runs"] == run["expected"],
        "runs": run["runs"],
        "expected": run["expected"],
        "slowest": max(pages.items(), key=lambda item: item[1]["server_ms"]["max"]),
        "queries": (min(queries), max(queries)),
        "constant": len(list_queries) == 1,
    }


def _number(value: float | None, unit: str, places: int = 1) -> str:
    return "–" if value is None else f"{value:.{places}f}{unit}"


def million_target(data: dict | None) -> list[str]:
    if row := not_run_here(TARGET, data):
        return row
    f = _figures(data)
    name, page = f["slowest"]
    measured = (
        f"idle CPU {_number(f['idle'], '%', 2)}; memory growth {f['memory']:.0f} MB; p99 "
        f"{_number(f['p99'], ' ms')} with {f['runs']:,} of {f['expected']:,} slots run; "
        f"slowest list page ({name}) {page['server_ms']['max']:.0f} ms; {f['queries'][0]} to "
        f"{f['queries'][1]} queries a page"
    )
    checks = [
        f["idle"] is not None and f["idle"] < IDLE_PERCENT,
        f["memory"] < MEMORY_MB,
        f["p99"] is not None and f["p99"] < LATE_MS,
        page["server_ms"]["max"] < PAGE_MS,
        f["constant"],
    ]
    return [
        TARGET,
        measured,
        verdict(all(checks), complete=f["complete"] and f["idle"] is not None),
    ]


def million_section(data: dict) -> str:
    settings = data["settings"]
    if not settings.get("measured"):
        return "Not run in a quick run: writing a million records takes a minute or more."
    run, shape = data["scheduler"], settings["shape"]
    idle, p99, p50 = run["idle_cpu_percent"], run["p99_ms"], run["p50_ms"]
    scheduler = table(
        ["schedules", "idle CPU % (worst window)", "memory growth MB", "slots run",
         "p50 ms", "p99 ms (worst window)", "ready before its first slot s"],
        [[f"{settings['schedules']:,}", _number(idle and idle["max"], "", 2),
          f"{run['peak_growth_mb']:.0f}", f"{run['runs']:,} of {run['expected']:,}",
          _number(p50 and p50["median"], ""), _number(p99 and p99["max"], ""),
          f"{run['ready_early_s']:.1f}"]],
    )  # fmt: skip
    pages = table(
        ["page", "server ms (median)", "max", "queries", "KB"],
        [
            [name, f"{row['server_ms']['median']:.1f}", f"{row['server_ms']['max']:.1f}",
             f"{row['queries']['median']:.0f}", f"{row['bytes'] / 1024:.0f}"]
            for name, row in data["pages"].items()
        ],
    )  # fmt: skip
    return (
        f"{settings['schedules']:,} interval schedules on SQLite, each every "
        f"{settings['schedules'] / settings['rate']:,.0f} s, so {settings['rate']:g} fall due "
        f"a second; one scheduler with its defaults (runs in worker processes, the no-op "
        f"worker task). Idle: {shape['idle_windows']} windows of {shape['idle_window']:g} s "
        f"with nothing due, the scheduler process's CPU share. Steady: "
        f"{shape['windows']} windows of {shape['window']:g} s after a {shape['warmup']:g} s "
        "warm-up, lateness inside the task. Memory: resident growth from before the "
        "scheduler started to its peak. Then the schedules list over the same records, "
        f"through Django's whole stack as a superuser, median of {settings['repeats']} "
        "requests after 2 warm-up.\n\n" + scheduler + "\n\n" + pages
    )


def million_reading(data: dict) -> str:
    if not data["settings"].get("measured"):
        return ""
    f = _figures(data)
    name, page = f["slowest"]
    text = (
        f"**{data['settings']['schedules']:,} schedules.** Idle, the scheduler used "
        f"{_number(f['idle'], '%', 2)} of "
        f"a core; it grew by {f['memory']:.0f} MB; at {data['settings']['rate']:g} runs/s "
        f"the slowest window's p99 was {_number(f['p99'], ' ms')} with {f['runs']:,} of "
        f"{f['expected']:,} slots run. The slowest list page ({name}) took "
        f"{page['server_ms']['max']:.0f} ms"
    )
    if not f["constant"]:
        text += "; the list's pages did not make the same number of queries"
    return text + "."
