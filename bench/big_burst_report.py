"""The big burst (10,000 due at once) in the report: its section, target row and reading."""

from __future__ import annotations

from formatting import table
from verdicts import INCOMPLETE, MET, NOT_MEASURED

TARGET = "10,000 runs due at once: reported"


def seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def big_burst_section(data: dict) -> str:
    settings = data["settings"]
    rows = [
        [f"{burst['started']:,} of {settings['size']:,}", seconds(burst["first_s"]),
         seconds(burst["half_s"]), seconds(burst["all_started_s"])]
        for burst in data["bursts"]
    ]  # fmt: skip
    return (
        f"{settings['size']:,} schedules whose slot is the same instant, nothing else due; one "
        f"scheduler on {settings['database']} with its defaults (runs in worker processes, the "
        "no-op worker task). Seconds from the slot until the first, the middle and the last "
        f"run started, measured inside the task; {settings['repeats']} repetition(s), each a "
        "fresh process over fresh records.\n\n"
        + table(["started", "first (s)", "half (s)", "all (s)"], rows)
    )


def big_burst_target(data: dict | None) -> list[str]:
    """Item 2 asks for the figure, not a limit: reported when every run of every burst
    started."""
    if not data:
        return [TARGET, NOT_MEASURED, INCOMPLETE]
    size, bursts = data["settings"]["size"], data["bursts"]
    done = [b["all_started_s"] for b in bursts]
    if not bursts or None in done:
        started = " + ".join(f"{b['started']:,}" for b in bursts) or "none"
        return [TARGET, f"{started} of {size:,} started", INCOMPLETE]
    return [TARGET, f"all started within {max(done):.2f} s (slowest of {len(done)})", MET]


def big_burst_reading(data: dict) -> str:
    size, bursts = data["settings"]["size"], data["bursts"]
    done = [b["all_started_s"] for b in bursts if b["all_started_s"] is not None]
    if len(done) < len(bursts) or not done:
        return (
            f"**Big burst.** Of {size:,} runs due at once, "
            + " + ".join(f"{b['started']:,}" for b in bursts)
            + " started before the benchmark gave up."
        )
    slowest = max(done)
    return (
        f"**Big burst.** {size:,} runs due at once all started within {slowest:.2f} s "
        f"({size / slowest:,.0f} runs/s), the first {min(b['first_s'] for b in bursts):.2f} s "
        "after their slot."
    )
