"""The takeover benchmark in the report: its section, targets, reading and timeline plot."""

from __future__ import annotations

from pathlib import Path

from formatting import table
from verdicts import INCOMPLETE, NOT_MEASURED, verdict

TARGETS = [
    "a killed scheduler's runs: `interrupted` within a heartbeat interval (+1 s) on its node, "
    "within `SILLO_STALE_AFTER` + a heartbeat interval (+1 s) from another; none executes on",
    "around a scheduler's kill: no slot executed twice, none left unclaimed",
]
NODE_NAMES = {"same": "same node", "other": "another node"}


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def deadline(shape: dict, node: str) -> float:
    """Seconds the peers may take to record the killed scheduler's runs interrupted: the
    next heartbeat pass (on its node a dead pid counts at once), and a second of passes."""
    stale = shape["stale_after"] if node == "other" else 0.0
    return stale + shape["heartbeat"] + 1.0


def skipped_in_flight(case: dict) -> int:
    """Missed slots the overlap rule skipped while the killed scheduler's run was in
    flight (recorded runs, not lost slots); results from before they were counted: 0."""
    return case.get("missed_skipped_in_flight", 0)


def takeover_targets(data: dict | None) -> list[list[str]]:
    if not data:
        return [[name, NOT_MEASURED, INCOMPLETE] for name in TARGETS]
    shape, cases = data["settings"]["shape"], data["cases"]
    recovery, slots, complete, ok_recovery, ok_slots = [], [], bool(cases), True, True
    for node in ("same", "other"):
        case = cases.get(node)
        if not case:
            complete = False
            continue
        after = case["interrupted_after_s"]
        # Something to recover, all of it recovered: otherwise there is nothing to judge.
        complete &= bool(after) and case["left_running"] == 0
        limit = deadline(shape, node)
        slowest = after[1] if after else None
        ok_recovery &= slowest is not None and slowest <= limit
        ok_recovery &= case["bodies_after_kill"] == 0
        recovery.append(
            f"{NODE_NAMES[node]}: {case['interrupted']} run(s) after "
            + ("–" if slowest is None else f"{slowest:.1f} s")
            + f" (limit {limit:g} s), {case['left_running']} left running, "
            f"{case['bodies_after_kill']} executing on"
        )
        unclaimed = case["missed"] - case["missed_claimed_by_killed"] - skipped_in_flight(case)
        ok_slots &= case["executed_twice"] == 0 and unclaimed == 0
        slots.append(
            f"{NODE_NAMES[node]}: {case['executed_twice']} twice, {unclaimed} unclaimed of "
            f"{case['slots']:,}"
        )
    return [
        [TARGETS[0], "; ".join(recovery) or NOT_MEASURED, verdict(ok_recovery, complete)],
        [TARGETS[1], "; ".join(slots) or NOT_MEASURED, verdict(ok_slots, complete)],
    ]


def takeover_section(data: dict) -> str:
    settings, shape = data["settings"], data["settings"]["shape"]
    rows = []
    for node, case in data["cases"].items():
        after = case["interrupted_after_s"]
        rows.append(
            [
                NODE_NAMES.get(node, node),
                case["victim"]["running"],
                case["victim"]["long_running"],
                case["interrupted"],
                "–" if not after else f"{after[0]:.2f}–{after[1]:.2f}",
                case["left_running"],
                case["bodies_after_kill"],
                f"{case['slots']:,}",
                case["missed"],
                case["missed_claimed_by_killed"],
                skipped_in_flight(case),
                case["executed_twice"],
                ms(case.get("p99_before_ms")),
                ms(case["p99_after_ms"]),
                "–" if case["max_after_ms"] is None else f"{case['max_after_ms']:.0f}",
                case["late_after"],
            ]
        )
    quick = " (shortened for a quick run)" if settings.get("quick") else " (the defaults)"
    return (
        f"{settings['schedulers']} `runscheduler` processes on one throwaway PostgreSQL (the "
        f"server above), {settings['steady']:,} schedules every {settings['every']:g} s "
        f"({settings['steady'] / settings['every']:.0f} runs/s) and {settings['long']} long "
        "runs in flight; the scheduler with the most long runs executing is killed with "
        "SIGKILL and the others go on. On its node the peers see its pid gone; from another "
        "node (simulated: its record names another node) they wait for its heartbeat to go "
        f"stale. Heartbeat every {shape['heartbeat']:g} s, stale after "
        f"{shape['stale_after']:g} s{quick}. Runs interrupted: seconds from the kill until the "
        "peers recorded them `interrupted`; executing on: long runs whose body was still "
        "executing after the kill (its worker must end with its scheduler). Steady slots: "
        "every slot due from a few seconds before the kill (after the schedulers' first "
        "second, their start-up) until a second before the watch ended; missed slots that "
        "the killed scheduler had claimed end `interrupted` (a claimed slot runs at most "
        "once, so it is not run again), and the schedule's next slots are recorded "
        "`skipped` while that run counts as in flight (the overlap rule, `max_instances`) "
        "until the peers interrupt it; unclaimed: missed and neither; late: after the "
        f"kill, over {settings['late_ms']:g} "
        "ms. The plot shows each steady slot's lateness around the kill.\n\n"
        + table(
            ["killed on", "its runs running", "of them long", "interrupted",
             "interrupted after s", "left running", "executing on", "steady slots", "missed",
             "missed, claimed by it", "missed, skipped: its run in flight", "executed twice",
             "p99 before ms", "p99 after ms", "max after ms", "late after"],
            rows,
        )
        + "\n\n![Lateness around the kill](benchmarks/takeover.svg)"
    )  # fmt: skip


def takeover_reading(data: dict) -> str:
    parts = []
    for node, case in data["cases"].items():
        after = case["interrupted_after_s"]
        late = (
            f"the steady slots' p99 lateness was {ms(case.get('p99_before_ms'))} ms before "
            f"the kill and {case['p99_after_ms']:.0f} ms after it ({case['late_after']} over "
            f"{data['settings']['late_ms']:g} ms)"
            if case["p99_after_ms"] is not None
            else "no steady slot was measured after the kill"
        )
        parts.append(
            f"killed on {NODE_NAMES.get(node, node)}, its {case['interrupted']} run(s) were "
            "recorded interrupted "
            + (f"{after[1]:.1f} s after the kill" if after else "never, within the watch")
            + f", {case['bodies_after_kill']} executed on; {late}"
        )
    return "**Takeover.** " + "; ".join(parts) + "."


def plot_takeover(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "sillo-bench"  # the same figures give the same file
    cases = data["cases"]
    figure, axes = plt.subplots(1, len(cases), figsize=(5.2 * len(cases), 3.4), sharey=True)
    axes = axes if len(cases) > 1 else [axes]
    for axis, (node, case) in zip(axes, cases.items(), strict=True):
        points = case["timeline"]
        axis.scatter([p[0] for p in points], [max(p[1], 0.1) for p in points], s=3)
        axis.axvline(0, color="black", linewidth=0.8)
        if case["interrupted_after_s"]:
            axis.axvline(case["interrupted_after_s"][1], color="tab:red", linewidth=0.8,
                         linestyle="--")  # fmt: skip
        axis.axhline(data["settings"]["late_ms"], color="grey", linewidth=0.8)
        axis.set_yscale("log")
        axis.set_title(f"killed on {NODE_NAMES.get(node, node)}")
        axis.set_xlabel("slot, seconds from the kill")
        axis.grid(True, which="both", alpha=0.25)
    axes[0].set_ylabel("lateness, ms (log)")
    figure.suptitle("Steady slots around a scheduler's kill (black: the kill; red dashes: its "
                    f"runs recorded interrupted; grey: {data['settings']['late_ms']:g} ms)",
                    fontsize=9)  # fmt: skip
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", metadata={"Date": None})
    plt.close(figure)
