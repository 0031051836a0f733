"""The run log at 10 million rows in the report: its section, reading and target row (item 5)."""

from __future__ import annotations

from formatting import table, whole, worst_p99
from verdicts import not_run_here, verdict

TARGET = (
    "run log at 10 million rows: lateness unchanged, pruning cost per day bounded, bytes per "
    "run, `/health/` and `/metrics` under 50 ms"
)
LATE_RATIO, LATE_SLACK_MS = 1.5, 5.0  # "unchanged": within 1.5× of the empty log's, + 5 ms
PRUNE_RATIO = 2.0  # "bounded": per pruned run, within 2× of its cost beside a small log
PASS_S = 1.0  # and no pass longer than this
REQUEST_MS = 50.0
DAY = 86_400


def _checks(db: dict, rate: float) -> dict:
    """Each judged figure of one database, and whether it holds."""
    empty, full = db["steady_empty"]["p99_ms"], db["steady_full"]["p99_ms"]
    small, big = db["pruning_small"], db["pruning_full"]
    slowest = max(row["server_ms"]["max"] for row in db["requests"].values())
    per_run = big["ms_per_1000"] / 1000 if big["ms_per_1000"] else None
    return {
        "late": bool(empty and full) and full["max"] <= LATE_RATIO * empty["max"] + LATE_SLACK_MS,
        "prune": bool(small["ms_per_1000"] and big["ms_per_1000"])
        and big["ms_per_1000"] <= PRUNE_RATIO * small["ms_per_1000"]
        and _longest(db) <= PASS_S,
        "requests": slowest < REQUEST_MS,
        "slowest_ms": slowest,
        "day_s": per_run * rate * DAY / 1000 if per_run else None,
        "complete": all(
            phase["runs"] == phase["expected"] for phase in (db["steady_empty"], db["steady_full"])
        )
        and db["rows"] >= db["expected_rows"],
    }


def _longest(db: dict) -> float:
    """The longest pruning pass of both phases, in seconds."""
    return max(db["pruning_small"]["longest_pass_s"], db["pruning_full"]["longest_pass_s"])


def _rate(data: dict) -> float:
    settings = data["settings"]
    return settings["schedules"] / settings["every_s"]


def _describe(db: dict, rate: float) -> str:
    c = _checks(db, rate)
    small, big = db["pruning_small"], db["pruning_full"]
    day = "–" if c["day_s"] is None else f"{c['day_s']:,.0f} s"
    return (
        f"{db['database']}: p99 {worst_p99(db['steady_empty'])} ms empty, "
        f"{worst_p99(db['steady_full'])} ms at {db['rows']:,} rows; pruning "
        f"{whole(small['ms_per_1000'])} ms per 1,000 runs beside {small['rows']:,} rows, "
        f"{whole(big['ms_per_1000'])} beside {big['rows']:,} (a day at {rate:g} runs/s: {day}), "
        f"longest pass {_longest(db):.2f} s; "
        f"{db['bytes_per_run']:,.0f} bytes a run; slowest of `/health/` and `/metrics` "
        f"{c['slowest_ms']:.0f} ms"
        + ("" if c["requests"] else _metrics_split(db))
        + ("" if c["late"] else _writeback(db))
        + ("" if c["prune"] else _pruning_split(db))
    )


def _metrics_split(db: dict) -> str:
    """Where `/metrics` spent its time, when this run measured it apart: reading the
    records and building the families (the product's), and writing the text (the
    Prometheus client library's)."""
    metrics = db["requests"]["/metrics"]
    collect, write = metrics.get("collect_ms"), metrics.get("write_ms")
    if not (collect and write):
        return ""
    return (
        f"; the measured reason: of `/metrics`, reading the records and building its "
        f"families took {collect['median']:.0f} ms at the median and prometheus_client "
        f"writing its {metrics['lines']:,} lines {write['median']:.0f} ms"
    )


def _pruning_split(db: dict) -> str:
    """Where pruning's growth went: finding each schedule's oldest kept run (which reads
    as many index entries as the retention keeps) and deleting the rows beyond it."""
    small, big = db["pruning_small"], db["pruning_full"]
    if small.get("finding_ms_per_1000") is None or big.get("finding_ms_per_1000") is None:
        return ""
    finding = small["finding_ms_per_1000"], big["finding_ms_per_1000"]
    deleting = small["ms_per_1000"] - finding[0], big["ms_per_1000"] - finding[1]
    return (
        f"; of the cost per 1,000 runs, finding each schedule's oldest kept run took "
        f"{whole(finding[0])} → {whole(finding[1])} ms (it reads as many index entries as "
        f"the schedule keeps runs), the rest {whole(deleting[0])} → {whole(deleting[1])} ms"
    )


def run_log_target(data: dict | None) -> list[str]:
    if row := not_run_here(TARGET, data):
        return row
    rate = _rate(data)
    databases = data["databases"]
    checks = [_checks(db, rate) for db in databases]
    ok = all(c["late"] and c["prune"] and c["requests"] for c in checks)
    complete = len(databases) == 2 and all(c["complete"] for c in checks)
    measured = "; ".join(_describe(db, rate) for db in databases)
    return [TARGET, measured, verdict(ok, complete=complete)]


def run_log_section(data: dict) -> str:
    settings = data["settings"]
    if not settings.get("measured"):
        return "Not run in a quick run: writing 10 million rows on each database takes minutes."
    rate = _rate(data)
    rows = []
    for db in data["databases"]:
        c = _checks(db, rate)
        requests = db["requests"]
        rows.append(
            [
                db["database"],
                f"{db['rows']:,} ({db['fill_s']:.0f} s)",
                f"{db['bytes_per_run']:,.0f}",
                f"{worst_p99(db['steady_empty'])} → {worst_p99(db['steady_full'])}",
                _most_writeback(db["steady_full"]),
                f"{whole(db['pruning_small']['ms_per_1000'])} → "
                f"{whole(db['pruning_full']['ms_per_1000'])}",
                f"{_longest(db):.2f}",
                f"{db['pruning_full']['idle_turn_s']:.1f}",
                "–" if c["day_s"] is None else f"{c['day_s']:,.0f}",
                f"{requests['/health/']['server_ms']['median']:.1f} "
                f"({requests['/health/']['queries']['median']:.0f} q)",
                f"{requests['/metrics']['server_ms']['median']:.1f} "
                f"({requests['/metrics']['queries']['median']:.0f} q, "
                f"{requests['/metrics']['bytes'] / 1024:.0f} KB)",
            ]
        )  # fmt: skip
    shape = settings["shape"]
    return (
        f"{settings['schedules']:,} schedules every {settings['every_s']:g} s ({rate:g} runs/s), "
        f"one `manage.py runscheduler` with its defaults. Lateness: the worst of "
        f"{shape['windows']} windows of {shape['window']:g} s after a {shape['warmup']:g} s "
        f"warm-up, inside the task, with an empty log and then with the full one. The log is "
        f"filled with finished runs, {settings['keep']:,} per schedule (the default "
        "retention), by the database itself (INSERT … SELECT over a series)"
        f"{_settled(data['databases'], settings)}. Pruning: the "
        "scheduler's bounded passes (200 schedules, 5,000 rows at most each) until a turn over "
        f"the schedules finds nothing, deleting 10 runs per schedule beyond the "
        f"{settings['small_keep']} kept of a small log, then beyond the {settings['keep']:,} "
        "of the full one; its cost per day is the per-run cost times a day of runs at this "
        "rate; an idle turn is one that found nothing to delete. Bytes per run: the growth "
        "of SQLite's pages in use after a checkpoint, or of PostgreSQL's run table with its "
        "indexes and TOAST, over the rows added. `/health/` (503 while no scheduler is up, "
        "after the same reads) and `/metrics` (token mode) through Django's whole stack, "
        "median of 10 after 2 warm-up. Writeback: the most memory the kernel held dirty or "
        "under writeback beside the full log's windows (/proc/meminfo, every 0.25 s): a "
        "commit's flush waits behind it.\n\n"
        + table(
            [
                "database",
                "rows (fill)",
                "bytes a run",
                "p99 ms empty → full",
                "writeback MB, full",
                "prune ms per 1,000 runs small → full",
                "longest pass s",
                "idle turn s",
                "prune s a day",
                "`/health/` ms",
                "`/metrics` ms",
            ],
            rows,
        )  # fmt: skip
    )


def _settled(databases: list[dict], settings: dict) -> str:
    """How the fill was brought to the state its hours of growth leave (run_log.settle)."""
    seconds = [f"{db['settle_s']:.0f} s on {db['database']}" for db in databases
               if "settle_s" in db]  # fmt: skip
    if not seconds:
        return ""
    checkpointed = "checkpoint" in settings.get("settle", "")  # results from before: no
    return (
        "; then it settled ("
        + ", ".join(seconds)
        + "): PostgreSQL's database was vacuumed and analysed"
        + (
            ", a checkpoint taken and the system's dirty pages written to disk (`sync`)"
            if checkpointed
            else ""
        )
        + ", the background work spread over the 28 hours such a log takes to grow, left "
        "otherwise to the steady phase after a fill of minutes"
    )


def _most_writeback(phase: dict) -> str:
    found = [mb for mb in phase.get("writeback_mb") or [] if mb is not None]
    return f"{max(found):,.0f}" if found else "–"


def _writeback(db: dict) -> str:
    """The measured reason a full-log window was slow: the kernel's writeback beside it."""
    full = db["steady_full"]
    if not full.get("writeback_mb") or not full.get("p99_by_window_ms"):
        return ""
    pairs = [
        (p99, mb)
        for p99, mb in zip(full["p99_by_window_ms"], full["writeback_mb"], strict=True)
        if p99 is not None and mb is not None
    ]
    if not pairs:
        return ""
    slowest = max(pairs)
    others = [mb for _, mb in pairs]
    others.remove(slowest[1])
    return (
        f"; the full log's slowest window (p99 {slowest[0]:.1f} ms) beside {slowest[1]:,.0f} MB of "
        "memory dirty or under writeback"
        + (f", the others beside at most {max(others):,.0f} MB" if others else "")
    )


def run_log_reading(data: dict) -> str:
    if not data["settings"].get("measured"):
        return ""
    rate = _rate(data)
    parts = []
    for db in data["databases"]:
        c = _checks(db, rate)
        misses = [
            name
            for name, ok in (
                ("lateness changed", c["late"]),
                ("pruning cost grew with the log", c["prune"]),
                (f"a request took {c['slowest_ms']:.0f} ms", c["requests"]),
            )
            if not ok
        ]
        parts.append(
            _describe(db, rate) + (f" ({', '.join(misses)})" if misses else " (all within limits)")
        )
    return "**Run log.** " + "; ".join(parts) + "."
