"""The restart benchmark in the report: its section, target and reading."""

from __future__ import annotations

from ceiling_report import knee, rate
from formatting import table
from verdicts import INCOMPLETE, NOT_MEASURED, verdict

LIMIT_S = 5.0  # issue 18, item 4: the first pass, and no current slot delayed beyond it
ISSUE_SIZE = 100_000
TARGET = (
    "restart after a day down (the issue: 100,000 one-minute triggers): first pass within "
    "5 s, and no slot due after the restart lost or more than 5 s late"
)


def seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def lost(current: dict) -> int:
    """Slots due after the restart that did not get a run started in time to count."""
    return current["skipped"] + current["missed"] + current["not_started"]


def restart_section(data: dict) -> str:
    settings, rows = data["settings"], []
    for policy, row in data["policies"].items():
        current = row["current"]
        rows.append(
            [
                f"`{policy}`",
                f"{row['schedules']:,}",
                "not done" if row["first_pass_s"] is None else seconds(row["first_pass_s"]),
                f"{current['ran']:,} of {current['expected']:,}",
                f"{seconds(current['late_p50_s'])} / {seconds(current['late_p99_s'])} / "
                f"{seconds(current['late_max_s'])}",
                f"{current['skipped']:,}",
                f"{current['missed']:,}",
                f"{current['not_started']:,}",
            ]
        )
    return (
        f"{settings['schedules']:,} one-minute schedules whose records say their next slot was "
        "a day ago; then the scheduler starts (SQLite, runs in worker processes, the product's "
        "defaults: `misfire_grace` 60 s, `max_instances` 1). First pass: from the scheduler "
        "ready until no schedule is a day behind. Current slots: those due after the restart, "
        f"up to 2 s before the end of a {settings['window_s']:g} s window after the first pass; "
        "lateness is the run's recorded start minus its slot. A current slot the catch-up took "
        'is `skipped` (misfire=skip) or has no run of its own (missed). `misfire="all"` is '
        "not run (it queues 100 runs per schedule by design).\n\n"
        + table(
            [
                "misfire",
                "schedules",
                "first pass (s)",
                "current slots run",
                "late p50 / p99 / max (s)",
                "skipped",
                "missed",
                "not started",
            ],
            rows,
        )  # fmt: skip
        + alone_sentence(data)
    )


def alone_sentence(data: dict) -> str:
    alone = data.get("alone")
    if not alone:
        return ""
    first = alone["first_pass_s"]
    took = (
        f"the first pass took {first:.1f} s, {per_schedule_us(alone):,.0f} µs a schedule"
        if first is not None
        else f"the first pass had not ended after {alone['measured_s']:.0f} s"
    )
    return (
        f"\n\nThe catch-up alone: {alone['schedules']:,} weekly schedules a day behind "
        f'(`misfire="skip"`), so that no slot falls due while it is measured: {took}.'
    )


def per_schedule_us(row: dict) -> float:
    return row["first_pass_s"] / row["schedules"] * 1e6


def beyond_the_ceiling(data: dict, ceiling: dict | None) -> str | None:
    """The measured reason no catch-up keeps every current slot on time, when there is
    one: the schedules fall due faster than the highest rate at which this machine's p99
    stayed under 100 ms with one SQLite scheduler (the same run's ceiling, the restart's
    setup), so the current slots alone leave no measured headroom for the catch-up."""
    if not ceiling:
        return None
    configs = ceiling.get("configs", [])
    ramps = [c for c in configs if (c["database"], c["schedulers"]) == ("SQLite", 1)]
    if not ramps:
        return None
    held, first_over = knee(ramps[0]["steps"])
    due = data["settings"]["schedules"] / data["settings"].get("every_s", 60.0)
    if first_over is None or (held is not None and due <= held["rate"]):
        return None
    if held is None or due >= first_over["rate"]:
        sustained = f"held {rate(held['rate'])} runs/s" if held else "held no step"
        return (
            f"its schedules fall due {rate(due)} times a second, and on this machine one "
            f"SQLite scheduler {sustained} and passed 100 ms p99 at {rate(first_over['rate'])} "
            "(the ceiling, this run): the current slots alone are more than it sustains, "
            "restart or not"
        )
    return (
        f"its schedules fall due {rate(due)} times a second, above the highest rate one SQLite "
        f"scheduler held on this machine ({rate(held['rate'])} runs/s; p99 passed 100 ms at "
        f"{rate(first_over['rate'])}; the ceiling, this run): the current slots alone leave "
        "the catch-up no measured headroom"
    )


def owed_runs(data: dict, big_burst: dict | None) -> str | None:
    """misfire="once" owes every schedule a run: at the rate this machine started a burst
    (the same run's big burst, the restart's setup), their starts alone outlast the limit."""
    if "once" not in data.get("policies", {}) or not big_burst or not big_burst.get("bursts"):
        return None
    done = [b["all_started_s"] for b in big_burst["bursts"]]
    if None in done:
        return None
    size = big_burst["settings"]["size"]
    runs_per_s = size / max(done)
    owed = data["settings"]["schedules"]
    if owed / runs_per_s <= LIMIT_S:
        return None
    return (
        f'`misfire="once"` owes each of the {owed:,} schedules a run, and this machine started '
        f"a burst of {size:,} at {rate(runs_per_s)} runs/s (this run): "
        f"{owed / runs_per_s:.0f} s of starts alone"
    )


def catch_up_alone(data: dict) -> str | None:
    """With nothing falling due, catching up the same number of schedules still took
    longer than the limit (the same run's catch-up alone): the claim path's own cost
    per schedule, whatever the load beside it."""
    alone = data.get("alone")
    if not alone or alone["first_pass_s"] is None or alone["first_pass_s"] <= LIMIT_S:
        return None
    return (
        f"with nothing falling due meanwhile, catching up {alone['schedules']:,} schedules "
        f"alone took {alone['first_pass_s']:.1f} s, {per_schedule_us(alone):,.0f} µs a "
        "schedule (this run): one scheduler's claim path, schedule by schedule"
    )


def measured_reasons(data: dict, ceiling: dict | None, big_burst: dict | None) -> list[str]:
    reasons = (catch_up_alone(data), beyond_the_ceiling(data, ceiling), owed_runs(data, big_burst))
    return [r for r in reasons if r]


def restart_targets(
    data: dict | None, ceiling: dict | None = None, big_burst: dict | None = None
) -> list[list[str]]:
    if not data or not data.get("policies"):
        return [[TARGET, NOT_MEASURED, INCOMPLETE]]
    policies = data["policies"]
    complete = set(policies) == set(data["settings"]["policies"])
    ok, parts = True, []
    for policy, row in policies.items():
        current, first = row["current"], row["first_pass_s"]
        complete &= first is not None and current["expected"] > 0
        worst = current["late_max_s"]
        ok &= first is not None and first <= LIMIT_S and lost(current) == 0
        ok &= worst is not None and worst <= LIMIT_S
        parts.append(
            f"{policy}: first pass {'not done' if first is None else f'{first:.1f} s'}, "
            f"current slots late up to {seconds(worst)} s, {lost(current):,} of "
            f"{current['expected']:,} lost"
        )
    size = data["settings"]["schedules"]
    measured = f"at {size:,}: " + "; ".join(parts)
    if size != ISSUE_SIZE:
        measured += f" (a quick run; the full run measures {ISSUE_SIZE:,})"
    reasons = [] if ok else measured_reasons(data, ceiling, big_burst)
    if reasons:
        measured += f"; the measured reasons: {'; '.join(reasons)}"
    return [[TARGET, measured, verdict(ok, complete)]]


def restart_reading(
    data: dict, ceiling: dict | None = None, big_burst: dict | None = None
) -> str | None:
    policies = data.get("policies")
    if not policies:
        return None
    size = data["settings"]["schedules"]
    parts = []
    for policy, row in policies.items():
        current, first = row["current"], row["first_pass_s"]
        done = (
            f"the first pass took {first:.1f} s"
            if first is not None
            else f"the first pass had not ended after {row['measured_s']:.0f} s"
        )
        parts.append(
            f'with `misfire="{policy}"` {done}; of the {current["expected"]:,} slots due after '
            f"the restart, {current['ran']:,} ran (the latest {seconds(current['late_max_s'])} s "
            f"after its slot) and {lost(current):,} did not run in time ({current['skipped']:,} "
            f"skipped, {current['missed']:,} never claimed, {current['not_started']:,} not "
            "started)"
        )
    parts += measured_reasons(data, ceiling, big_burst)
    return (
        f"**Restart.** With {size:,} one-minute schedules a day behind, " + "; ".join(parts) + "."
        " _Background (the design, not measured in this run): each pass claims up to 500 "
        "due schedules, the slots due since the start first and the downtime's backlog at "
        "least half; meanwhile the one-minute schedules keep falling due, a sixtieth of them "
        "each second; a current slot is skipped when its schedule still had a run in flight "
        "(`max_instances` 1) or, under `skip`, when it was claimed past its grace "
        "(docs/scheduler.md)._"
    )
