"""The sustained-ceiling ramps in the report: their section, plot, reading and target row."""

from __future__ import annotations

from pathlib import Path

from formatting import table
from verdicts import INCOMPLETE, NOT_MEASURED, verdict

TARGET = (
    "sustained ceiling (the rate at which p99 lateness passes 100 ms), SQLite and PostgreSQL "
    "with 1, 2 and 4 schedulers"
)
# What the issue asks to be ramped: every database with each number of schedulers.
EXPECTED = [(database, count) for database in ("SQLite", "PostgreSQL") for count in (1, 2, 4)]
BUSY = 0.9  # cores this busy at the first step over the limit: the machine's CPU limits it


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def rate(value: float) -> str:
    return f"{value:,.0f}"


def label(config: dict) -> str:
    count = config["schedulers"]
    return f"{config['database']}, {count} scheduler{'s' if count > 1 else ''}"


def knee(steps: list[dict]) -> tuple[dict | None, dict | None]:
    """The highest step that held, and the lowest above it that did not (None: none)."""
    ordered = sorted(steps, key=lambda step: step["rate"])
    held = [step for step in ordered if step["held"]]
    top = held[-1]["rate"] if held else float("-inf")
    failed = [step for step in ordered if not step["held"] and step["rate"] > top]
    return (held[-1] if held else None), (failed[0] if failed else None)


def _knee_text(config: dict) -> str:
    best, first_over = knee(config["steps"])
    text = (
        f"held up to {rate(best['rate'])} runs/s (p99 {ms(best['p99_ms'])} ms)"
        if best
        else f"no step held, down to {rate(min(s['rate'] for s in config['steps']))} runs/s"
    )
    if first_over:
        text += (
            f", at {rate(first_over['rate'])} runs/s p99 {ms(first_over['p99_ms'])} ms with "
            f"{first_over['runs']:,} of {first_over['expected']:,} slots run, the cores "
            f"{first_over['cpu_busy']:.0%} busy"
        )
    elif best:
        text += " (the ramp's top; the limit was not reached)"
    return text


def ceiling_section(data: dict) -> str:
    settings = data["settings"]
    summary = []
    for config in data["configs"]:
        best, first_over = knee(config["steps"])
        summary.append(
            [
                label(config),
                rate(best["rate"]) if best else "none held",
                ms(best["p99_ms"]) if best else "–",
                rate(first_over["rate"]) if first_over else "not reached",
                f"{first_over['cpu_busy']:.0%}" if first_over else "–",
                f"{sum(step['executed_twice'] for step in config['steps']):,}",
            ]
        )
    steps = [
        [
            label(config),
            rate(step["rate"]),
            f"{step['schedules']:,}",
            f"{step['runs']:,} of {step['expected']:,}",
            ms(step["p50_ms"]),
            ms(step["p99_ms"]),
            ms(step["max_ms"]),
            f"{step['cpu_busy']:.0%}",
            "held" if step["held"] else "**passed the limit**",
        ]
        for config in data["configs"]
        for step in sorted(config["steps"], key=lambda step: step["rate"])
    ]
    ramped = ", ".join(label(config) for config in data["configs"])
    left = [f"{db}, {n}" for db, n in EXPECTED if not _ramped(data, db, n)]
    shape = settings["shape"]
    return (
        f"Each step writes fresh records and starts `manage.py runscheduler` processes over "
        f"them (the product's defaults: runs in worker processes, the no-op worker task); "
        f"schedules every {settings['every_s']:g} s, slots spread evenly. From "
        f"{settings['first_rate']:g} runs/s the rate doubles until a step's p99 passes "
        f"{settings['late_ms']:g} ms or a slot of its window does not run (halves if the "
        f"first did not hold), then one step is measured between (×1.4). Each step: a "
        f"{shape['warmup']:g} s warm-up, one {shape['window']:g} s window; lateness inside the "
        f"task; cores busy: all {settings.get('cores', '?')} of the machine's, during the "
        f"window, from /proc/stat. Ramped: {ramped}"
        + (f"; not ramped in this run: {'; '.join(left)} scheduler(s)" if left else "")
        + ".\n\n"
        + table(
            [
                "configuration",
                "knee runs/s",
                "p99 there ms",
                "first over runs/s",
                "cores busy there",
                "slots run twice",
            ],
            summary,
        )  # fmt: skip
        + "\n\n"
        + table(
            [
                "configuration",
                "runs/s",
                "schedules",
                "slots run",
                "p50 ms",
                "p99 ms",
                "max ms",
                "cores busy",
                "step",
            ],
            steps,
        )  # fmt: skip
        + "\n\n![p99 lateness by rate](benchmarks/ceiling.svg)"
    )


def _ramped(data: dict, database: str, count: int) -> bool:
    return any(
        c["database"] == database and c["schedulers"] == count and c["steps"]
        for c in data["configs"]
    )


def ceiling_target(data: dict | None) -> list[str]:
    """Item 3: met once every configuration was ramped to its knee (or the ramp's top)
    and no slot ran twice; what limits it is in the reading."""
    if not data or not data.get("configs"):
        return [TARGET, NOT_MEASURED, INCOMPLETE]
    measured = "; ".join(f"{label(c)}: {_knee_text(c)}" for c in data["configs"])
    left = [f"{db}, {n}" for db, n in EXPECTED if not _ramped(data, db, n)]
    if left:
        measured += f"; not ramped in this run: {'; '.join(left)} scheduler(s)"
    twice = sum(step["executed_twice"] for c in data["configs"] for step in c["steps"])
    if twice:
        measured += f"; {twice:,} slot(s) ran twice"
    return [TARGET, measured, verdict(twice == 0, complete=not left)]


def ceiling_reading(data: dict) -> str:
    parts = [f"{label(config)} {_knee_text(config)}" for config in data["configs"]]
    text = "**Ceiling.** " + "; ".join(parts) + "."
    for database in ("SQLite", "PostgreSQL"):
        knees = {
            c["schedulers"]: knee(c["steps"])[0]
            for c in data["configs"]
            if c["database"] == database
        }
        if len(knees) < 2:
            continue
        ordered = sorted(knees)
        figures = ", ".join(
            f"{n}: {rate(knees[n]['rate']) if knees[n] else 'none'}" for n in ordered
        )
        text += f" On {database}, {_raised(knees, ordered)} (schedulers: runs/s held, {figures})"
        busy = [knee(c["steps"])[1] for c in data["configs"] if c["database"] == database]
        saturated = [step for step in busy if step and step["cpu_busy"] >= BUSY]
        over = [step for step in busy if step]
        if saturated and len(saturated) == len(over):
            text += (
                f"; at every first step over the limit the machine's "
                f"{data['settings'].get('cores', '?')} cores were at least {BUSY:.0%} busy: "
                "its CPU is what limits the rate"
            )
        elif over and not saturated:
            text += (
                f"; at the first steps over the limit the cores were at most "
                f"{max(step['cpu_busy'] for step in over):.0%} busy: not the CPU"
            )
        text += "."
    return text


def _raised(knees: dict, ordered: list[int]) -> str:
    """Whether each larger number of schedulers held a higher rate than one scheduler."""
    one = knees[ordered[0]]
    # None held nothing: any rate another number of schedulers held is higher.
    higher = [
        n
        for n in ordered[1:]
        if knees[n] is not None and (one is None or knees[n]["rate"] > one["rate"])
    ]
    lower = [n for n in ordered[1:] if n not in higher]
    if not lower:
        return "more schedulers raised the knee"
    if not higher:
        return "more schedulers did not raise the knee"
    return (
        f"{' and '.join(map(str, higher))} schedulers raised the knee, "
        f"{' and '.join(map(str, lower))} did not"
    )


def plot_ceiling(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "sillo-bench"  # the same figures give the same file
    figure, axis = plt.subplots(figsize=(6.0, 3.6))
    for config in data["configs"]:
        steps = sorted(config["steps"], key=lambda step: step["rate"])
        points = [(s["rate"], s["p99_ms"]) for s in steps if s["p99_ms"] is not None]
        if points:
            style = "-" if config["database"] == "SQLite" else "--"
            axis.plot(*zip(*points, strict=True), style, marker="o", label=label(config))
    axis.axhline(data["settings"]["late_ms"], color="grey", linewidth=0.8)
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("steady runs/s (log)")
    axis.set_ylabel("p99 lateness, ms (log)")
    axis.grid(True, which="both", alpha=0.25)
    axis.legend(fontsize=7, frameon=False)
    axis.set_title("p99 lateness by steady rate (line: 100 ms)", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", metadata={"Date": None})
    plt.close(figure)
