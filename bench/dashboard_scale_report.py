"""The dashboard in the report at issue 18's scale: its section, reading and target (item 8).

The full run measures the pages on the run log's 10 million rows grown to 100,000
schedules (bench/dashboard_scale.py), on SQLite and PostgreSQL; a quick run has only
bench/dashboard.py's 10,000 schedules, which can miss the target but not meet it.
"""

from __future__ import annotations

from formatting import spread, table, whole, worst_p99
from verdicts import INCOMPLETE, NOT_MEASURED, verdict

TARGET = (
    "dashboard at 100,000 schedules and 10 million runs: every page under 100 ms server "
    "time with a constant number of queries, and with 20 concurrent users"
)
PAGE_MS = 100.0


def at_scale(run_log: dict | None) -> list[dict]:
    """The databases on which the full run measured the dashboard at the issue's scale."""
    if not run_log or not run_log["settings"].get("measured"):
        return []
    return [db for db in run_log["databases"] if db.get("dashboard")]


def _slowest(pages: dict) -> tuple[str, float]:
    name = max(pages, key=lambda page: pages[page]["server_ms"]["max"])
    return name, pages[name]["server_ms"]["max"]


def _queries_grew(pages: dict, small: dict | None) -> list[str]:
    """The pages that made more queries here than at bench/dashboard.py's scale."""
    if not small:
        return []
    before = {name: page["queries"]["max"] for name, page in small["pages"].items()}
    return [name for name, page in pages.items() if page["queries"]["max"] > before.get(name, 1e9)]


def _served_complete(db: dict) -> bool:
    served = db["dashboard"]["served"]
    pages = served.get("load", {}).get("pages", {})
    return (
        served["runs"] == served["expected"]
        and bool(pages)
        and all(page["requests"] and not page["failed"] for page in pages.values())
    )


def _slowest_served(db: dict) -> tuple[str, float | None]:
    pages = db["dashboard"]["served"]["load"]["pages"]
    name = max(pages, key=lambda page: pages[page]["p99_ms"] or 0.0)
    return name, pages[name]["p99_ms"]


def _describe(db: dict, small: dict | None) -> str:
    dash = db["dashboard"]
    name, ms = _slowest(dash["pages"])
    queries = [page["queries"]["max"] for page in dash["pages"].values()]
    grew = _queries_grew(dash["pages"], small)
    constant = (
        f"more than at {small['settings']['schedules']:,} schedules on {', '.join(grew)}"
        if grew
        else f"as at {small['settings']['schedules']:,} schedules"
        if small
        else "not compared with a smaller scale"
    )
    load = dash["served"].get("load")
    served = "not measured"
    if load:
        page, p99 = _slowest_served(db)
        requests = sum(p["requests"] for p in load["pages"].values())
        failed = sum(p["failed"] for p in load["pages"].values())
        served = (
            f"slowest p99 response {'–' if p99 is None else f'{p99:,.0f}'} ms ({page}), "
            f"{requests:,} requests in {load['seconds']:.0f} s, {failed} failed"
        )
    return (
        f"{db['database']}: at {dash['schedules']:,} schedules and {dash['rows']:,} runs, one "
        f"user: slowest {name} {ms:.0f} ms; {min(queries):.0f} to {max(queries):.0f} queries a "
        f"page, {constant}; {load['users'] if load else 20} users through `runscheduler --serve`: "
        f"{served}; the scheduler's p99 lateness {worst_p99(dash['served'])} ms beside them "
        f"({worst_p99(db['steady_full'])} ms without)"
    )


def dashboard_target(small: dict | None, run_log: dict | None) -> list[str]:
    """Item 8: every page under 100 ms on both databases at the issue's scale, with no
    more queries than at 10,000 schedules; complete when the 20 users' phase ran every
    slot and every request was answered. Below the issue's scale a slow page misses,
    and nothing else is judged."""
    databases = at_scale(run_log)
    if not databases:
        return _below_scale(small)
    ok = all(
        _slowest(db["dashboard"]["pages"])[1] < PAGE_MS
        and not _queries_grew(db["dashboard"]["pages"], small)
        for db in databases
    )
    complete = (
        len(databases) == 2 and small is not None and all(_served_complete(db) for db in databases)
    )
    measured = "; ".join(_describe(db, small) for db in databases)
    return [TARGET, measured, verdict(ok, complete=complete)]


def _below_scale(small: dict | None) -> list[str]:
    if not small:
        return [TARGET, NOT_MEASURED, INCOMPLETE]
    settings, pages = small["settings"], small["pages"]
    name, ms = _slowest(pages)
    queries = {page["queries"]["max"] for page in pages.values()}
    measured = (
        f"at {settings['schedules']:,} schedules and {settings['runs']:,} runs, one user: "
        f"slowest {name} {ms:.0f} ms; {min(queries)} to {max(queries)} queries a page; "
        "the issue's scale and concurrent users not measured (a full run measures them)"
    )
    return [TARGET, measured, verdict(False) if ms >= PAGE_MS else INCOMPLETE]


def dashboard_scale_section(run_log: dict) -> str:
    databases = at_scale(run_log)
    if not databases:
        return "Not run in a quick run: the full run measures it on the run log's 10 million rows."
    rows = []
    for db in databases:
        dash = db["dashboard"]
        load = dash["served"].get("load", {"pages": {}})
        for name, page in dash["pages"].items():
            users = load["pages"].get(name)
            rows.append(
                [
                    db["database"],
                    name,
                    spread(page["server_ms"]),
                    f"{page['queries']['max']:.0f}",
                    f"{page['bytes'] / 1024:.0f}",
                    whole(users and users["p50_ms"]),
                    whole(users and users["p99_ms"]),
                    f"{users['requests']:,} ({users['failed']})" if users else "–",
                ]
            )
    lateness = "; ".join(
        f"{db['database']} {worst_p99(db['dashboard']['served'])} ms beside the users, "
        f"{worst_p99(db['steady_full'])} ms without"
        for db in databases
    )
    first, settings = databases[0]["dashboard"], run_log["settings"]
    return (
        f"The run log's {first['rows']:,} runs ({settings['rows'] // settings['schedules']:,} "
        f"for each of its {settings['schedules']:,} schedules, and 100,000 for one schedule "
        f"over the last month) and {first['schedules']:,} schedules (the others daily, one in "
        "five paused, none due while measured). One user: each page through "
        "Django's whole stack as a superuser, median of 10 requests after 2 warm-up "
        "[min–max]. Then 20 users, each a thread of the benchmark's process with its own "
        "connection, request the pages in turn with no pause, through the real server: "
        "`runscheduler --serve` (daphne and the scheduler in one process) while it runs the "
        "10,000 schedules' 100 runs a second; each page's response time at the user, and the "
        "requests that failed. The users share the machine's cores with the server and its "
        f"workers. The scheduler's worst-window p99 lateness: {lateness}.\n\n"
        + table(
            [
                "database",
                "page",
                "one user: server ms",
                "queries",
                "KB",
                "20 users: p50 ms",
                "p99 ms",
                "requests (failed)",
            ],
            rows,
        )
    )


def dashboard_scale_reading(run_log: dict | None, small: dict | None) -> str:
    databases = at_scale(run_log)
    if not databases:
        return ""
    return "**Dashboard at scale.** " + "; ".join(_describe(db, small) for db in databases) + "."
