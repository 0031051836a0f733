"""The sustained-ceiling ramp in the report: its section, plot, reading and target row."""

from __future__ import annotations

from pathlib import Path

from formatting import table
from verdicts import INCOMPLETE, NOT_MEASURED

TARGET = (
    "sustained ceiling (the rate at which p99 lateness passes 100 ms), SQLite and PostgreSQL "
    "with 1, 2 and 4 schedulers"
)


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def knee(data: dict) -> tuple[dict | None, dict | None]:
    """The highest step that held, and the lowest that did not (None: not reached)."""
    steps = sorted(data["steps"], key=lambda step: step["rate"])
    held = [step for step in steps if step["held"]]
    failed = [step for step in steps if not step["held"]]
    return (held[-1] if held else None), (failed[0] if failed else None)


def ceiling_section(data: dict) -> str:
    settings = data["settings"]
    rows = [
        [
            f"{step['rate']:,.0f}",
            f"{step['schedules']:,}",
            f"{step['runs']:,} of {step['expected']:,}",
            ms(step["p50_ms"]),
            ms(step["p99_ms"]),
            ms(step["max_ms"]),
            "held" if step["held"] else "**passed the limit**",
        ]
        for step in sorted(data["steps"], key=lambda step: step["rate"])
    ]
    return (
        f"One scheduler on {settings['database']} with its defaults (runs in worker processes, "
        f"the no-op worker task); schedules every {settings['every_s']:g} s, slots spread "
        f"evenly. The rate doubles from {settings['first_rate']:g} runs/s until a step's p99 "
        f"passes {settings['late_ms']:g} ms or a slot of its window does not run, then one step "
        f"is measured between (×1.4). Each step: a fresh process and records, a "
        f"{settings['shape']['warmup']:g} s warm-up, one {settings['shape']['window']:g} s "
        "window; lateness inside the task. PostgreSQL and several schedulers are not ramped.\n\n"
        + table(
            ["runs/s", "schedules", "slots run", "p50 ms", "p99 ms", "max ms", "step"],
            rows,
        )
        + "\n\n![p99 lateness by rate](benchmarks/ceiling.svg)"
    )


def ceiling_target(data: dict | None) -> list[str]:
    """Item 3: reported for what was ramped; not met until PostgreSQL and 2 and 4
    schedulers are ramped too."""
    if not data:
        return [TARGET, NOT_MEASURED, INCOMPLETE]
    best, first_over = knee(data)
    measured = "SQLite, 1 scheduler: " + (
        f"held up to {best['rate']:,.0f} runs/s (p99 {ms(best['p99_ms'])} ms)"
        if best
        else "no step held"
    )
    if first_over:
        measured += (
            f", at {first_over['rate']:,.0f} runs/s p99 {ms(first_over['p99_ms'])} ms with "
            f"{first_over['runs']:,} of {first_over['expected']:,} slots run"
        )
    else:
        measured += " (the ramp's top; the limit was not reached)"
    return [TARGET, measured + "; PostgreSQL and 2 and 4 schedulers not ramped", INCOMPLETE]


def ceiling_reading(data: dict) -> str:
    best, first_over = knee(data)
    if best is None:
        return (
            f"**Ceiling.** On SQLite with one scheduler no step of the ramp held, the first at "
            f"{data['steps'][0]['rate']:,.0f} runs/s."
        )
    text = (
        f"**Ceiling.** On SQLite with one scheduler the steady load held up to "
        f"{best['rate']:,.0f} runs/s ({best['schedules']:,} schedules every "
        f"{data['settings']['every_s']:g} s, p99 {ms(best['p99_ms'])} ms)"
    )
    if first_over:
        text += (
            f"; at {first_over['rate']:,.0f} runs/s p99 was {ms(first_over['p99_ms'])} ms and "
            f"{first_over['runs']:,} of {first_over['expected']:,} slots ran"
        )
    return text + "."


def plot_ceiling(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "sillo-bench"  # the same figures give the same file
    steps = sorted(data["steps"], key=lambda step: step["rate"])
    figure, axis = plt.subplots(figsize=(6.0, 3.4))
    for key, style, label in (("p50_ms", "--", "p50"), ("p99_ms", "-", "p99")):
        points = [(s["rate"], s[key]) for s in steps if s[key] is not None]
        axis.plot(*zip(*points, strict=True), style, marker="o", label=label, linewidth=1.6)
    axis.axhline(data["settings"]["late_ms"], color="grey", linewidth=0.8)
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("steady runs/s (log)")
    axis.set_ylabel("lateness, ms (log)")
    axis.grid(True, which="both", alpha=0.25)
    axis.legend(fontsize=8, frameon=False)
    axis.set_title("Lateness by steady rate, one scheduler on SQLite (line: 100 ms)", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", metadata={"Date": None})
    plt.close(figure)
