"""The report's targets (with verdicts) and its reading, from one run's figures."""

from __future__ import annotations

from formatting import median, table
from verdicts import MET, next_fire_comparison, targets


def next_fire_reading(cases: list[dict]) -> str:
    """Which peer is how much slower, where, and where it is closest."""
    parts = []
    for peer in ("cronsim", "croniter", "minute scan"):
        found = next_fire_comparison(cases, peer)
        ratios = found["ratios"]
        if not ratios:
            parts.append(f"{peer} was compared on no expression")
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
            text += (
                f"; its fire times differ, or were not measured, on {', '.join(found['differs'])}"
            )
        parts.append(text)
    return "**Next fire times.** Beside Sillo Dash: " + "; ".join(parts) + "."


def targets_and_reading(facts: dict) -> tuple[str, str]:
    rows, reading = targets(facts), []
    nf = facts.get("next_fire")
    if nf:
        reading.append(next_fire_reading(nf["cases"]))
    sched = facts.get("scheduler")
    if sched:
        load_ = sched["load"]
        sizes = sorted(load_)
        at = 10_000 if 10_000 in load_ else sizes[-1]
        worst = max(
            (load_[n]["sillo"]["burst"]["all_started_s"] or {"max": float("inf")})["max"]
            for n in sizes
        )
        idle = median(load_[at]["sillo"]["idle_cpu_percent"])
        naive_idle = load_[at].get("naive", {}).get("idle_cpu_percent")
        aps = {n: load_[n].get("apscheduler3-memory") for n in sizes}
        naive = {n: load_[n].get("naive") for n in sizes}
        big = sizes[-1]
        text = (
            f"**Lateness.** Sillo Dash's p99 stays between "
            f"{min(median(load_[n]['sillo']['p99_ms']) for n in sizes):.1f} and "
            f"{max(median(load_[n]['sillo']['p99_ms']) for n in sizes):.1f} ms from "
            f"{sizes[0]:,} to {big:,} schedules: each pass reads only the due schedules through "
            "a partial index and sleeps until the next slot, so the number of schedules barely "
            "matters. It trails APScheduler's memory store"
        )
        if aps[big]:
            text += (
                f" (p99 {median(aps[big]['p99_ms']):.1f} ms at {big:,}), which keeps every job "
                "in a heap in the process and records nothing, while Sillo Dash claims each slot "
                "and writes each run to the database before and after it runs: the price of "
                "surviving a crash, running several schedulers on one database and showing every "
                "run in the dashboard"
            )
        text += "."
        small = sizes[0]
        if naive[big] and naive[small]:
            text += (
                f" The naive design is late by half its one-second tick at best (p50 "
                f"{median(naive[small]['p50_ms']):,.0f} ms at {small:,} schedules), and its "
                f"scan grows with the table: p50 {median(naive[big]['p50_ms']):,.0f} ms at "
                f"{big:,}, with {naive[big]['runs']}/{naive[big]['expected']} slots run in the "
                "windows."
            )
        sqlalchemy = load_[big].get("apscheduler3-sqlalchemy")
        if sqlalchemy:
            text += (
                f" APScheduler's SQLAlchemy store, which also keeps its jobs on disk, fires with "
                f"p99 {median(sqlalchemy['p99_ms']):.1f} ms at {big:,}: it records no runs, only "
                "each job's next time."
            )
        reading.append(text)
        sql = {n: load_[n].get("apscheduler3-sqlalchemy") for n in sizes}
        if idle is not None and naive_idle:
            reading.append(
                f"**Idle.** With nothing due, Sillo Dash sleeps until the earliest slot (two "
                f"indexed lookups per pass) and uses {idle:.2f}% of a core at {at:,} schedules"
                + (
                    ", heartbeat and resync included"
                    if sched.get("shape", {}).get("idle_window", 0) > 30
                    else " (in windows shorter than its 30 s resync)"
                )
                + "; the naive loop reads every record every second and uses "
                f"{median(naive_idle):.0f}%."
            )
        burst_text = (
            f"**Throughput.** A burst of 1,000 due at once is started in "
            f"{median(load_[at]['sillo']['burst']['all_started_s']):.2f} s at {at:,} schedules "
            f"({median(load_[at]['sillo']['burst']['runs_per_s']):,.0f} runs/s)"
        )
        if aps[at] and sql[at]:
            burst_text += (
                f"; APScheduler's memory store needs "
                f"{median(aps[at]['burst']['all_started_s']):.3f} s (it writes nothing), its "
                f"SQLAlchemy store {median(sql[at]['burst']['all_started_s']):.2f} s (one UPDATE "
                "and commit per job)"
            )
            ours_rate = median(load_[at]["sillo"]["burst"]["runs_per_s"])
            theirs_rate = median(sql[at]["burst"]["runs_per_s"])
            if ours_rate and theirs_rate:
                lead = "leads" if ours_rate > theirs_rate else "trails"
                burst_text += (
                    f": among the designs that keep schedules on disk Sillo Dash {lead}, at "
                    f"{ours_rate / theirs_rate:.2f}× the SQLAlchemy store's rate while also "
                    "recording every run"
                )
        burst_text += (
            ". Sillo Dash claims a batch of up to 500 slots in one transaction and writes "
            "outcomes in batches with one executemany each; what remains is building the run "
            "records in Python."
        )
        if worst >= 1.0:
            burst_text += (
                f" The one-second target is missed by {worst - 1:.2f} s at the worst size. What "
                "would close it: building the run rows without model instances (raw executemany, "
                "as the outcomes already are), and a second database thread so that writing "
                "outcomes never delays the next claim."
            )
        reading.append(burst_text)
        memory = sched.get("memory") or {}
        if memory.get("sillo") and memory.get("apscheduler3-memory"):
            reading.append(
                f"**Memory.** Sillo Dash's scheduler holds no schedule in memory "
                f"({max(memory['sillo']['bytes_per_schedule'], 0):,.0f} bytes per schedule, "
                "within measurement noise): schedules live in the database and each pass reads "
                "only the due ones. APScheduler's memory store keeps a job object per schedule "
                f"({memory['apscheduler3-memory']['bytes_per_schedule']:,.0f} bytes each); the "
                "naive scan holds every record while it scans."
            )
    dash = facts.get("dashboard")
    if dash:
        first = dash.get("list, page 1")
        admin = dash.get("admin changelist, page 1")
        if first and admin:
            reading.append(
                f"**Dashboard.** The list page renders in {median(first['server_ms']):.0f} ms with "
                f"{median(first['queries']):.0f} queries at 10,000 schedules, on any page and with "
                "search or filters (the query count does not grow with the page size or the "
                f"table); the admin changelist takes {median(admin['server_ms']):.0f} ms for twice "
                "the rows and none of the flags or actions. Both are dominated by template "
                "rendering, not by the database."
            )
    live = facts.get("live")
    if live:
        bare, log, listing = (
            live.get(k) for k in ("bare (no rendering)", "live log", "schedules list")
        )
        if bare and log and listing:
            least = min(v["delivered"] or 0 for v in (bare, log, listing))
            delivered = (
                "every stream delivered every event"
                if least >= 1
                else f"every stream delivered at least {100 * least:.1f}% of the events"
            )
            reading.append(
                f"**Live views.** With 20 clients at 100 events/s {delivered}; "
                f"the live log's p99 delay is {median(log['delay_p99_ms']):.0f} ms and the list's "
                f"{median(listing['delay_p99_ms']):.0f} ms against "
                f"{median(bare['delay_p99_ms']):.0f} ms for bare forwarding: rendering a row costs "
                "the difference. The list stream was the weak point before this benchmark: every "
                "client re-rendered every changed row from the database, and at this load 20 list "
                "pages received 1.3% of the events, seconds late. A list page now subscribes to "
                "its own page's schedules only, and its rows are rendered in batches shared by "
                "every client with the same permissions (docs/dashboard.md)."
            )
    hostile = facts.get("hostile")
    if hostile:
        cpu, size = hostile["worst_cpu_ms"], hostile["worst_bytes"]
        reading.append(
            f"**Hostile input.** The worst preview or builder request a Viewer can send costs "
            f"{cpu:.0f} ms of CPU and returns {size / 1024:.0f} KB (the review measured 24.7 s "
            "and 11.6 MB before the limits): a compound `all` search shares one budget of "
            "steps however deeply it nests, and is refused with that reason when it runs out; "
            "the builder reads at most the limits' nodes, levels and characters, and refuses "
            "requests with too many fields before reading them."
        )
    missed = [row for row in rows if row[2] != MET]
    if missed:
        reading.append(
            "**Missed or incomplete targets.** "
            + " ".join(f"{row[0]}: measured {row[1]}." for row in missed)
        )
    return table(["target (from the issues)", "measured", "verdict"], rows), "\n\n".join(reading)
