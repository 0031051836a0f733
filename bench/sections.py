"""The report's sections: one table (and its legend) per benchmark, and the lateness plot."""

from __future__ import annotations

from pathlib import Path

from formatting import median, ratio, spread, table

SYSTEM_NAMES = {
    "sillo": "Sillo Dash (runs in worker processes, the default)",
    "sillo-inline": 'Sillo Dash, task declared isolation="inline"',
    "apscheduler3-memory": "APScheduler 3, memory store",
    "apscheduler3-sqlalchemy": "APScheduler 3, SQLAlchemy store (SQLite)",
    "naive": "naive: wake every second, scan every record",
    "poll": "indexed poll: wake every second, read the due records through an index",
}


# ---------------------------------------------------------------- durability


def sqlite_parity(systems: dict) -> str:
    """The SQLite settings every system on disk ran with, as read back from each, and
    whether they are the same (a faster figure bought with less durability is no
    comparison)."""
    on_disk = {name: found for name, found in systems.items() if "synchronous" in found}
    if not on_disk:
        return "The SQLite settings were not recorded in this run."
    kinds = {(found["journal_mode"], found["synchronous"]) for found in on_disk.values()}
    if len(kinds) == 1:
        journal, synchronous = next(iter(kinds))
        return (
            f"Every system that keeps its records on disk ran with journal_mode={journal} and "
            f"synchronous={synchronous} (read back from each system's own connection)."
        )
    return (
        "**Not the same durability:** "
        + "; ".join(
            f"{name}: journal_mode={found['journal_mode']}, synchronous={found['synchronous']}"
            for name, found in on_disk.items()
        )
        + "."
    )


def postgres_settings(settings: dict) -> str:
    found = settings.get("durability", {}).get("PostgreSQL", {}).get("sillo")
    if not found:
        return "settings not recorded in this run"
    return ", ".join(f"{name} {value}" for name, value in found.items())


# ---------------------------------------------------------------- sections


def next_fire_section(data: dict) -> tuple[str, dict]:
    systems = ["sillo", "cronsim", "croniter", "minute scan"]
    rows = []
    for case in data["cases"]:
        ours = case["systems"]["sillo"].get("median_ms")
        cells = [f"`{case['expression']}`", case["tz"]]
        for name in systems:
            figure = case["systems"][name]
            if "median_ms" not in figure:
                cells.append(figure["status"])
                continue
            text = f"{figure['median_ms']:.2f} [{figure['min_ms']:.2f}–{figure['max_ms']:.2f}]"
            if name != "sillo":
                text += f" ({ratio(figure['median_ms'], ours)})"
            cells.append(text)
        rows.append(cells)
    settings = data["settings"]
    text = (
        f"The next 1,000 fire times from 2026-01-01, each expression in its zone. Milliseconds, "
        f"median of {settings['repeats']} runs after a warm-up [min–max] (the minute scan: "
        f"{settings['scan_repeats']}); in brackets after a peer, its time ÷ Sillo Dash's "
        "(above 1: Sillo Dash is faster). Before any timing, each peer's fire times are compared "
        "with Sillo Dash's: a peer that does not read an expression says so, and one whose fire "
        "times differ says where and is not timed. Every call of every library starts with the "
        "same cache state (Sillo Dash's parse cache emptied: every repetition includes the "
        "parse, as the peers' do).\n\n" + table(["expression", "zone", *systems], rows)
    )
    return text, {"cases": data["cases"]}


def scheduler_sections(data: dict) -> tuple[str, dict]:
    load_ = {int(n): by for n, by in data["load"].items()}
    settings = data["settings"]
    shape = settings["shape"]
    parts = []
    rows = []
    for n, by_system in load_.items():
        ours = by_system.get("sillo")
        for name, row in by_system.items():
            rows.append(
                [
                    f"{n:,}",
                    SYSTEM_NAMES.get(name, name),
                    f"{row['runs']}/{row['expected']}",
                    spread(row["p50_ms"]),
                    spread(row["p99_ms"]),
                    spread(row["max_ms"]),
                    ""
                    if name == "sillo" or not ours
                    else ratio(median(row["p99_ms"]), median(ours["p99_ms"])),
                ]
            )
    parts.append(
        f"### Fire lateness\n\n{settings['rate']:.0f} runs a second of no-op async tasks, "
        f"whatever the number of schedules (slots spread evenly), on SQLite. "
        f"{sqlite_parity(settings.get('durability', {}).get('SQLite', {}))} Milliseconds "
        f"from the slot to the task starting; {shape['windows']} windows of "
        f"{shape['window']:g} s after a {shape['warmup']:g} s warm-up, each window a "
        "repetition: median of the windows' figures [min–max]. Runs: slots measured / slots "
        "due in the windows. p99 ratio: the row's p99 ÷ Sillo Dash's default (above 1: Sillo "
        "Dash fires closer to the slot).\n\n"
        + table(
            [
                "schedules",
                "system",
                "runs",
                "p50 ms",
                "p99 ms",
                "max ms",
                "p99 ratio (above 1: Sillo Dash better)",
            ],
            rows,
        )
        + "\n\n![Lateness distribution per system and number of schedules](benchmarks/lateness.svg)"
    )
    rows = []
    for n, by_system in load_.items():
        ours = by_system.get("sillo")
        for name, row in by_system.items():
            burst = row["burst"]
            rows.append(
                [
                    f"{n:,}",
                    SYSTEM_NAMES.get(name, name),
                    " + ".join(map(str, burst["started"])),
                    spread(burst["all_started_s"], 3),
                    spread(burst["runs_per_s"], 0),
                    ""
                    if name == "sillo" or not ours
                    else ratio(
                        median(burst["all_started_s"]), median(ours["burst"]["all_started_s"])
                    ),
                ]
            )
    parts.append(
        f"### Dispatch throughput\n\n{settings['burst']:,} schedules due at the same instant, "
        f"{shape['bursts']} times (each burst a repetition, each with its own schedules), beside "
        "the steady load above and the n schedules. Seconds until the last run of a burst started, "
        "and runs started per second. Ratio: the row's seconds ÷ Sillo Dash's (above 1: Sillo "
        "Dash starts the burst sooner).\n\n"
        + table(
            [
                "schedules",
                "system",
                "started",
                "all started after s",
                "runs/s",
                "ratio (above 1: Sillo Dash faster)",
            ],
            rows,
        )
    )
    parts.append(steady_cpu_section(load_))
    rows = []
    for n, by_system in load_.items():
        for name, row in by_system.items():
            if row["idle_cpu_percent"]:
                figure = row["idle_cpu_percent"]
                rows.append([f"{n:,}", SYSTEM_NAMES.get(name, name), spread(figure, 2),
                             figure["n"]])  # fmt: skip
    covers = (
        "each longer than Sillo Dash's 30 s resync, so its periodic work (heartbeat every 5 s, "
        "resync every 30 s) is in every window"
        if shape["idle_window"] > 30
        else "shorter than Sillo Dash's 30 s resync in this quick run, which measures Sillo "
        "Dash alone; the full run covers the resync and every system"
    )
    parts.append(
        "### Idle CPU\n\nBefore the first slot, nothing due: CPU time of the whole process ÷ wall "
        f"time, in % of one core, over windows of about {shape['idle_window']:g} s after a "
        f"warm-up ({covers}), median [min–max].\n\n"
        + table(["schedules", "system", "CPU % of a core", "windows"], rows)
    )
    memory = data.get("memory") or {}
    sizes = sorted(load_)
    rows = []
    for name in load_[sizes[-1]]:
        growth = [
            f"{load_[n][name]['rss_growth_bytes'] / 2**20:.1f}" if name in load_[n] else "–"
            for n in sizes
        ]
        per = memory.get(name, {}).get("bytes_per_schedule")
        rows.append(
            [
                SYSTEM_NAMES.get(name, name),
                *growth,
                "–" if per is None else f"{per:,.0f}",
                f"{load_[sizes[-1]][name]['peak_rss_mb']:.0f}",
            ]
        )
    parts.append(
        "### Memory per schedule\n\nResident memory the scheduler process gained from just before "
        "the system started to the end of the idle phase (MB), each run in a fresh process over "
        "records written beforehand. Per schedule: the growth between the smallest and largest "
        f"runs ÷ the difference in schedules, so what a system holds at any size cancels out "
        "(not clamped: below 0 means the smaller run grew more). "
        f"Peak: the process's highest resident size during the {sizes[-1]:,}-schedule run.\n\n"
        + table(
            [
                "system",
                *(f"+MB at {n:,}" for n in sizes),
                "bytes per schedule",
                f"peak MB at {sizes[-1]:,}",
            ],
            rows,
        )
    )
    return "\n\n".join(parts), {
        "load": load_,
        "memory": memory,
        "shape": shape,
        "burst_size": settings["burst"],
    }


def steady_cpu_section(load_: dict) -> str:
    """Item 1's CPU per run under steady load, for each system."""
    rows = []
    for n, by_system in load_.items():
        ours = (by_system.get("sillo") or {}).get("steady_cpu") or {}
        for name, row in by_system.items():
            cpu = row.get("steady_cpu") or {}
            rows.append(
                [
                    f"{n:,}",
                    SYSTEM_NAMES.get(name, name),
                    spread(cpu.get("ms_per_run"), 2),
                    spread(cpu.get("percent_of_core"), 0),
                    ""
                    if name == "sillo" or not (cpu.get("ms_per_run") and ours.get("ms_per_run"))
                    else ratio(median(cpu["ms_per_run"]), median(ours["ms_per_run"])),
                ]
            )
    return (
        "### CPU per run under steady load\n\nIn the lateness windows above: CPU time (user and "
        "system) of the scheduler's process and every process under it (Sillo Dash's worker "
        "processes, with the tasks they ran) ÷ the runs that started in the window, and the "
        "same CPU ÷ wall time in % of one core; median of the windows [min–max]. Read from "
        "/proc in clock ticks (10 ms a process), so a 1 s window of a quick run is coarse. "
        "Sillo Dash writes each run to its log (a row, its outcome) and, by default, starts it "
        "in a worker process; the peers keep no run log and start the task as a coroutine in "
        "their own process (Sillo Dash's inline mode does too). Ratio: the row's CPU per run "
        "÷ Sillo Dash's default (above 1: Sillo Dash spends less).\n\n"
        + table(
            [
                "schedules",
                "system",
                "CPU ms a run",
                "CPU % of a core",
                "ratio (above 1: Sillo Dash spends less)",
            ],
            rows,
        )
    )


def postgres_section(data: dict) -> str:
    settings = data["settings"]
    rows = []
    for case in data["cases"]:
        burst = case["burst"]
        rows.append(
            [
                case["schedulers"],
                f"{case['runs']}/{case['expected']}",
                spread(case["p50_ms"]),
                spread(case["p99_ms"]),
                spread(case["max_ms"]),
                case.get("executed_twice", "not measured"),
                case.get("unique_conflicts", "not measured"),
                case.get("claim_conflicts", "not measured"),
                case.get("claims_lost", "not measured"),
                " + ".join(map(str, burst["started"])),
                spread(burst["all_started_s"], 3),
                spread(burst["runs_per_s"], 0),
            ]
        )
    return (
        f"{settings['steady']:,} schedules every {settings['every']:g} s "
        f"({settings['steady'] / settings['every']:.0f} runs/s) and bursts of "
        f"{settings['burst']:,}, with {' and '.join(map(str, settings['counts']))} "
        "`runscheduler` process(es) on one throwaway "
        f"PostgreSQL ({postgres_settings(settings)}). The task runs in a worker process (the "
        "default) and its body notes when it started: lateness is that start minus the slot, "
        "and every figure here comes from those notes, not from the run table. Windows and "
        "bursts are repetitions as above. Slots executed twice: slots whose task body ran more "
        "than once (the run table's unique constraint cannot hide these); unique-slot "
        "conflicts: how often the schedulers logged, and counted (`sillo_claim_conflicts`), "
        "that a slot they claimed already had a run (their safety net fired). These must be "
        "0. Claims lost: due slots a scheduler read and another claimed first, from the "
        "schedulers' own counter (`sillo_claims_lost`): how often they raced for a slot and "
        "the compare-and-set gave it to one, evidence that the schedulers did compete (0 "
        "with one scheduler).\n\n"
        + table(
            ["schedulers", "runs", "p50 ms", "p99 ms", "max ms", "slots executed twice",
             "unique-slot conflicts logged", "… counted", "claims lost", "burst started",
             "burst: all started after s", "burst runs/s"],
            rows,
        )
    )  # fmt: skip


def dashboard_section(data: dict) -> tuple[str, dict]:
    settings = data["settings"]
    rows = []
    for name, page in data["pages"].items():
        rows.append(
            [
                name,
                spread(page["server_ms"]),
                f"{median(page['queries']):.0f}",
                f"{page['bytes'] / 1024:.0f}",
            ]
        )
    text = (
        f"{settings['schedules']:,} schedules and {settings['runs']:,} runs on SQLite; each page "
        "requested through Django's whole stack (middleware, view, template; no network) as a "
        f"superuser, median of {settings['repeats']} requests after 2 warm-up [min–max]. The list "
        "shows 50 rows a page with flags, human trigger text and the actions each row allows; the "
        "admin changelist (the peer every Django project has) shows 100 plain rows.\n\n"
        + table(["page", "server ms", "queries", "KB"], rows)
    )
    return text, data["pages"]


def isolation_section(data: dict) -> str:
    settings = data["settings"]
    rows = []
    for kind in ("sync", "async"):
        process, inline = data[f"process-{kind}"], data[f"inline-{kind}"]
        extra = (median(process["p50_us"]) or 0) - (median(inline["p50_us"]) or 0)
        rows.append(
            [
                kind,
                spread(process["p50_us"]),
                spread(process["p99_us"]),
                spread(inline["p50_us"]),
                spread(inline["p99_us"]),
                f"{extra:.0f}",
            ]
        )
    return (
        f"A no-op task run {settings['runs']:,} times in a row through the executor (the whole "
        "run pipeline), in a warm worker process (`isolation=\"process\"`, the default) and in "
        f"the scheduler (`isolation=\"inline\"`); median of {settings['repeats']} repetitions "
        "[min–max], in microseconds. The first worker (with the fork server that sets Django up "
        f"once) was ready after {data['worker_start_s']['first']:.2f} s; later workers are forks "
        "of it. The scheduler benchmark above runs `sillo` in process mode (the default) and "
        "`sillo-inline` with the task declared inline.\n\n"
        + table(
            ["task", "process p50 µs", "process p99 µs", "inline p50 µs", "inline p99 µs",
             "isolation costs (p50, µs)"],
            rows,
        )
    )  # fmt: skip


def live_section(data: dict) -> tuple[str, dict]:
    settings = data["settings"]
    shape = settings["shape"]
    rows = []
    for name, view in data["views"].items():
        rows.append(
            [
                name,
                f"{100 * (view['delivered'] or 0):.1f}%",
                f"{view['events']:,}",
                spread(view["delay_p50_ms"]),
                spread(view["delay_p99_ms"]),
                spread(view["delay_max_ms"]),
            ]
        )
    text = (
        f"{settings['clients']} authenticated websocket clients on one daphne, "
        f"{settings['rate']:.0f} run events a second announced through the scheduler's own "
        "line of announcements (`Announcer`, which sends them in batches: at most one message "
        "a group every 50 ms) over Redis (channels_redis), going round the 50 schedules of one "
        f"list page. {shape['windows']} windows of {shape['window']:g} s after a "
        f"{shape['warmup']:g} s warm-up; delivered: (event, client) pairs that arrived ÷ "
        "events × clients; delay from announcing to arrival in ms, median of the windows "
        "[min–max]. The bare stream forwards each batch without rendering: the floor set by "
        "Channels, Redis and daphne.\n\n"
        + table(
            ["stream", "delivered", "events", "delay p50 ms", "delay p99 ms", "delay max ms"], rows
        )
    )
    return text, data["views"]


def hostile_section(data: dict) -> tuple[str, dict]:
    settings = data["settings"]
    limits = settings["limits"]
    rows = []
    for name, request in data["requests"].items():
        rows.append(
            [
                name,
                spread(request["cpu_ms"]),
                f"{request['bytes'] / 1024:.1f}",
                f"{request['steps']:,}",
                ", ".join(str(code) for code in request["status"]),
            ]
        )
    before = settings["before"]
    text = (
        "The costliest requests the lowest role (Viewer) can send to the live preview and the "
        "trigger builder, each built to be as costly as the limits allow, requested through "
        "Django's whole stack; CPU time of the serving process, median of "
        f"{settings['repeats']} requests after 2 warm-up [min–max]; steps: the timing engine's "
        f"search work (one step: one child asked for a slot). Limits: depth "
        f"{limits['max_depth']}, {limits['max_children']} children a compound, "
        f"{limits['max_nodes']} parts, {limits['max_text']} characters a value, "
        f"{limits['search_budget']:,} steps a search, {settings['builder_max_fields']} fields a "
        f"builder request (docs/security.md). Before them, the review measured "
        f"{before['cpu_ms'] / 1000:.1f} s of CPU for one nested `all` preview and "
        f"{before['bytes'] / 2**20:.1f} MB for the 998-field builder request.\n\n"
        + table(["request", "CPU ms", "KB", "steps", "status"], rows)
    )
    return text, {
        "worst_cpu_ms": data["worst_cpu_ms"],
        "worst_bytes": data["worst_bytes"],
        "before": before,
    }


# ---------------------------------------------------------------- plot


def plot_lateness(load_: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "sillo-bench"  # the same figures give the same file
    sizes = sorted(load_)
    figure, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.6), sharey=True)
    axes = axes if len(sizes) > 1 else [axes]
    styles = {
        "sillo": "-",
        "sillo-inline": (0, (5, 1, 1, 1)),
        "apscheduler3-memory": "--",
        "apscheduler3-sqlalchemy": "-.",
        "naive": ":",
        "poll": (0, (1, 1)),
    }
    for axis, n in zip(axes, sizes, strict=True):
        for name, row in load_[n].items():
            values = [max(v, 0.01) for v in row["late_ms_quantiles"]]
            if not values:
                continue
            share = [100 * i / (len(values) - 1 or 1) for i in range(len(values))]
            axis.plot(
                values,
                share,
                linestyle=styles.get(name, "-"),
                label=SYSTEM_NAMES.get(name, name),
                linewidth=1.6,
            )
        axis.set_xscale("log")
        axis.set_title(f"{n:,} schedules")
        axis.set_xlabel("lateness, ms (log)")
        axis.axvline(100, color="grey", linewidth=0.8)
        axis.grid(True, which="both", alpha=0.25)
    axes[0].set_ylabel("% of runs started within")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    figure.suptitle("Fire lateness at 100 runs/s (vertical line: the 100 ms target)", fontsize=10)
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", metadata={"Date": None})
    plt.close(figure)
