"""The report's targets (with verdicts) and its reading, from one run's figures.

Every sentence of a finding is written from this run's figures: which system
leads and by how much comes from comparing them, never from a fixed word.
What the figures cannot show (why a design behaves as it does, what an
earlier review measured) is set apart and labelled as background.
"""

from __future__ import annotations

from big_burst_report import big_burst_reading
from ceiling_report import ceiling_reading
from dashboard_scale_report import dashboard_scale_reading
from formatting import median, table
from million_report import million_reading
from restart_report import restart_reading, restart_targets
from run_log_report import run_log_reading
from scale_targets import scale_targets
from takeover_report import takeover_reading, takeover_targets
from verdicts import MET, next_fire_comparison, targets

BACKGROUND = "_Background (the design, not measured in this run):"


def background(text: str) -> str:
    return f" {BACKGROUND} {text}_"


def times(a: float, b: float) -> str:
    """How many times a is b, as a figure a reader can check."""
    return f"{a / b:.2f}×" if b else "–"


def next_fire_reading(cases: list[dict]) -> str:
    """Which peer is how much slower, where, and where it is closest."""
    parts = []
    for peer in ("cronsim", "croniter", "minute scan"):
        found = next_fire_comparison(cases, peer)
        ratios = found["ratios"]
        if not ratios:
            parts.append(f"{peer} was compared on 0 of {len(cases)} expressions")
            continue
        closest = min(ratios, key=ratios.get)
        text = (
            f"{peer} takes {min(ratios.values()):.2f}× to {max(ratios.values()):.1f}× Sillo "
            f"Dash's time on the {len(ratios)} expressions where both gave the same fire "
            f"times (closest on {closest})"
        )
        if found["unread"]:
            text += f", and does not read {', '.join(found['unread'])}"
        if found["differs"]:
            text += f"; its fire times differ from Sillo Dash's on {', '.join(found['differs'])}"
        if found["gave_up"]:
            text += f"; it gave up or was not measured on {', '.join(found['gave_up'])}"
        parts.append(text)
    return (
        "**Next fire times.** Beside Sillo Dash: "
        + "; ".join(parts)
        + "."
        + background(
            "the engine jumps field by field (month, matching day, hour, minute) where "
            "cronsim and croniter step through candidate times and the scan tests every minute."
        )
    )


def lateness_reading(load_: dict) -> str:
    sizes = sorted(load_)
    small, big = sizes[0], sizes[-1]
    ours = {n: median(load_[n]["sillo"]["p99_ms"]) for n in sizes if "sillo" in load_[n]}
    if not ours or None in ours.values():
        return "**Lateness.** Sillo Dash's p99 was not measured at every size in this run."
    text = f"**Lateness.** Sillo Dash's p99 is {ours[small]:.1f} ms at {small:,} schedules"
    text += (
        f" and {ours[big]:.1f} ms at {big:,} ({times(ours[big], ours[small])} for "
        f"{big // small:,}× the schedules)."
        if big != small
        else "."
    )
    for name, label in (
        ("apscheduler3-memory", "APScheduler's memory store"),
        ("apscheduler3-sqlalchemy", "APScheduler's SQLAlchemy store"),
        ("poll", "the indexed one-second poll"),
        ("naive", "the naive full scan"),
    ):
        row = load_[big].get(name)
        theirs = row and median(row["p99_ms"])
        if not theirs:
            continue
        lead = "leads" if ours[big] < theirs else "trails"
        text += (
            f" At {big:,} schedules Sillo Dash {lead} {label}: p99 {theirs:,.1f} ms, "
            f"{times(theirs, ours[big])} Sillo Dash's, with {row['runs']}/{row['expected']} "
            "slots run in the windows."
        )
    return text + background(
        "each pass of Sillo Dash reads only the due schedules through a partial index, "
        "claims each slot and writes each run before and after it runs; APScheduler keeps "
        "its jobs in a heap (the SQLAlchemy store also saves each job's next time) and "
        "records no runs; both one-second loops start a slot up to a second after it."
    )


def idle_reading(load_: dict, at: int, idle_window: float) -> str | None:
    figures = {
        name: median(row["idle_cpu_percent"])
        for name, row in load_[at].items()
        if row.get("idle_cpu_percent")
    }
    if "sillo" not in figures:
        return None
    others = "; ".join(f"{name} {value:.2f}%" for name, value in figures.items() if name != "sillo")
    return (
        f"**Idle.** With nothing due, Sillo Dash uses {figures['sillo']:.2f}% of a core at "
        f"{at:,} schedules over windows of {idle_window:g} s"
        + (f" (the others: {others})." if others else ".")
        + background(
            "Sillo Dash sleeps until the earliest slot, waking for its heartbeat (5 s) and "
            "resync (30 s); a window shorter than 30 s may hold no resync."
        )
    )


def cpu_reading(load_: dict, at: int) -> str | None:
    """Item 1: what a run costs each system in CPU under the steady load."""
    figures = {
        name: median((row.get("steady_cpu") or {}).get("ms_per_run"))
        for name, row in load_[at].items()
    }
    ours, inline = figures.get("sillo"), figures.get("sillo-inline")
    if ours is None:
        return None
    others = "; ".join(
        f"{name} {value:.2f} ms" for name, value in figures.items()
        if value is not None and name not in ("sillo", "sillo-inline")
    )  # fmt: skip
    text = (
        f"**CPU per run.** Under the steady load at {at:,} schedules a run cost Sillo Dash "
        f"{ours:.2f} ms of CPU with its worker processes"
        + (f" ({inline:.2f} ms inline)" if inline is not None else "")
        + (f"; the others: {others}." if others else ".")
    )
    return text + background(
        "Sillo Dash writes every run and its outcome to the database and, by default, hands "
        "it to a worker process; the peers start a coroutine in their own process and keep "
        "no run log (APScheduler's SQLAlchemy store writes the job's next run time)."
    )


def throughput_reading(load_: dict, at: int, worst: float | None) -> str:
    ours = load_[at]["sillo"]["burst"]["all_started_s"]
    if not ours:
        return f"**Throughput.** Sillo Dash completed no burst at {at:,} schedules in this run."
    text = (
        f"**Throughput.** At {at:,} schedules Sillo Dash's slowest burst of 1,000 took "
        f"{ours['max']:.2f} s to start (median {ours['median']:.2f} s)"
    )
    peers = []
    for name, label in (
        ("apscheduler3-memory", "APScheduler's memory store"),
        ("apscheduler3-sqlalchemy", "APScheduler's SQLAlchemy store"),
        ("poll", "the indexed poll"),
    ):
        row = load_[at].get(name)
        theirs = row and row["burst"]["all_started_s"]
        if theirs:
            peers.append(
                f"{label} {theirs['max']:.3f} s ({times(theirs['max'], ours['max'])} Sillo "
                "Dash's time)"
            )
    text += ("; " + ", ".join(peers) if peers else "") + "."
    if worst is not None and worst >= 1.0:
        text += f" The 1 s target is missed by {worst - 1:.2f} s at the slowest burst and size."
    return text + background(
        "Sillo Dash claims due slots in batches in one transaction and records every run, "
        "a crowd of them from before their instant by the claims' measured cost; the runs "
        "beyond the free workers are started in batches as workers free up "
        "(docs/scheduler.md). APScheduler's memory store writes nothing and its SQLAlchemy "
        "store one UPDATE and commit per job. Where the remaining time goes is not measured "
        "here."
    )


def memory_reading(memory: dict) -> str | None:
    if not memory.get("sillo"):
        return None
    parts = [
        f"{name} {found['bytes_per_schedule']:,.0f}"
        for name, found in memory.items()
        if name != "sillo"
    ]
    small, large = memory["sillo"]["between"]
    text = (
        f"**Memory.** Between {small:,} and {large:,} schedules Sillo Dash's scheduler grew by "
        f"{memory['sillo']['bytes_per_schedule']:,.0f} bytes per schedule"
        + (f" (the others, bytes per schedule: {'; '.join(parts)})" if parts else "")
        + ", measured before any slot ran"
        + (
            f"; below 0: its process grew more at {small:,} than at {large:,}."
            if memory["sillo"]["bytes_per_schedule"] < 0
            else "."
        )
    )
    return text + background(
        "schedules live in the database and each pass reads only the due ones; "
        "APScheduler's memory store keeps a job object per schedule."
    )


def scheduler_reading(sched: dict) -> list[str]:
    load_ = sched["load"]
    sizes = sorted(load_)
    at = 10_000 if 10_000 in load_ else sizes[-1]
    if "sillo" not in load_[at]:
        return ["**Scheduler.** Sillo Dash was not measured in this run."]
    slowest = [
        load_[n]["sillo"]["burst"]["all_started_s"]["max"]
        for n in sizes
        if "sillo" in load_[n] and load_[n]["sillo"]["burst"]["all_started_s"]
    ]
    paragraphs = [
        lateness_reading(load_),
        cpu_reading(load_, at),
        idle_reading(load_, at, sched.get("shape", {}).get("idle_window", 0)),
        throughput_reading(load_, at, max(slowest) if slowest else None),
        memory_reading(sched.get("memory") or {}),
    ]
    return [text for text in paragraphs if text]


def dashboard_reading(dash: dict) -> str | None:
    first, admin = dash.get("list, page 1"), dash.get("admin changelist, page 1")
    if not first or not admin:
        return None
    lists = {name: page for name, page in dash.items() if name.startswith("list")}
    queries = [median(page["queries"]) for page in lists.values()]
    slowest = max(lists, key=lambda name: median(lists[name]["server_ms"]))
    return (
        f"**Dashboard.** The list page renders in {median(first['server_ms']):.0f} ms with "
        f"{median(first['queries']):.0f} queries; across the {len(lists)} list requests "
        f"measured the queries range from {min(queries):.0f} to {max(queries):.0f} and the "
        f"slowest is {slowest} ({median(lists[slowest]['server_ms']):.0f} ms). The admin "
        f"changelist takes {median(admin['server_ms']):.0f} ms with "
        f"{median(admin['queries']):.0f} queries."
    )


def live_reading(live: dict) -> str | None:
    bare, log, listing = (
        live.get(k) for k in ("bare (no rendering)", "live log", "schedules list")
    )
    if not (bare and log and listing):
        return None
    least = min(v["delivered"] or 0 for v in (bare, log, listing))
    p99 = {name: median(view["delay_p99_ms"]) for name, view in live.items()}
    delays = ", ".join(
        f"{name} {value:.0f} ms" if value is not None else f"{name} none (nothing delivered)"
        for name, value in p99.items()
    )
    above = ""
    if None not in (p99.get("bare (no rendering)"), p99.get("live log"), p99.get("schedules list")):
        base = p99["bare (no rendering)"]
        above = (
            f" (the live log {p99['live log'] - base:.0f} ms and the list "
            f"{p99['schedules list'] - base:.0f} ms above bare forwarding)"
        )
    return (
        f"**Live views.** The least complete stream delivered {100 * least:.1f}% of the "
        f"events; p99 delay: {delays}{above}."
        + background(
            "the difference over bare forwarding is the rendering of rows; the scheduler "
            "sends run events in batches, one message a group every 50 ms at most, and a "
            "list page takes the all-runs batches and keeps its own rows "
            "(docs/dashboard.md)."
        )
    )


def hostile_reading(hostile: dict) -> str:
    cpu, size, before = hostile["worst_cpu_ms"], hostile["worst_bytes"], hostile.get("before")
    text = (
        f"**Hostile input.** The worst preview or builder request a Viewer can send costs "
        f"{cpu:.0f} ms of CPU and returns {size / 1024:.0f} KB."
    )
    if before:
        text += (
            f" _Background (an earlier review, not this run): {before['cpu_ms'] / 1000:.1f} s "
            f"and {before['bytes'] / 2**20:.1f} MB before the limits._"
        )
    return text + background(
        "a compound search shares one budget of steps however deeply it nests; the builder "
        "reads at most the limits' nodes, levels and characters."
    )


def targets_and_reading(facts: dict) -> tuple[str, str]:
    rows = targets(facts) + takeover_targets(facts.get("takeover"))
    rows += restart_targets(facts.get("restart"), facts.get("ceiling"), facts.get("big_burst"))
    rows += scale_targets(facts)
    reading = []
    if facts.get("next_fire"):
        reading.append(next_fire_reading(facts["next_fire"]["cases"]))
    if facts.get("scheduler"):
        reading += scheduler_reading(facts["scheduler"])
    if facts.get("dashboard"):
        reading.append(dashboard_reading(facts["dashboard"]))
    if facts.get("live"):
        reading.append(live_reading(facts["live"]))
    if facts.get("hostile"):
        reading.append(hostile_reading(facts["hostile"]))
    if facts.get("takeover"):
        reading.append(takeover_reading(facts["takeover"]))
    if facts.get("restart"):
        reading.append(
            restart_reading(facts["restart"], facts.get("ceiling"), facts.get("big_burst"))
        )
    if facts.get("ceiling"):
        reading.append(ceiling_reading(facts["ceiling"]))
    if facts.get("big_burst"):
        reading.append(big_burst_reading(facts["big_burst"]))
    if facts.get("million") and million_reading(facts["million"]):
        reading.append(million_reading(facts["million"]))
    if facts.get("run_log") and run_log_reading(facts["run_log"]):
        reading.append(run_log_reading(facts["run_log"]))
    reading.append(dashboard_scale_reading(facts.get("run_log"), facts.get("dashboard_data")))
    missed = [row for row in rows if row[2] != MET]
    if missed:
        reading.append(
            f"**Missed or incomplete targets ({len(missed)} of {len(rows)}).** "
            + " ".join(f"{row[0]}: measured {row[1]}." for row in missed)
        )
    reading = [text for text in reading if text]
    return table(["target (from the issues)", "measured", "verdict"], rows), "\n\n".join(reading)
