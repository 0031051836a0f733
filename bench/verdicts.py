"""The report's targets and their verdicts, from one run's figures.

A target is met only on complete data: every run the windows expected
happened, every burst completed, every window was measured. It is judged on
the worst repetition (the slowest window, the slowest burst), never on the
median, since a user meets the worst one too. A benchmark that did not run,
or ran short, gives "incomplete", which is not met.
"""

from __future__ import annotations

from formatting import ratio

MET, MISSED = "met", "**missed**"
INCOMPLETE = "**incomplete: not met**"
NOT_MEASURED = "not measured in this run"


def verdict(ok: bool | None, complete: bool = True) -> str:
    if not complete or ok is None:
        return INCOMPLETE
    return MET if ok else MISSED


def not_run_here(target: str, data: dict | None) -> list[str] | None:
    """The row of a benchmark that only a full run makes, if this run did not make it."""
    if not data:
        return [target, NOT_MEASURED, INCOMPLETE]
    if not data["settings"].get("measured"):
        return [target, NOT_MEASURED + " (a full run measures it)", INCOMPLETE]
    return None


def worst(figure: dict | None) -> float | None:
    return figure["max"] if figure else None


# ---------------------------------------------------------------- completeness


def steady_complete(row: dict, windows: int) -> bool:
    """Every window measured and every slot due in them run, once."""
    p99 = row.get("p99_ms")
    return bool(row["expected"] and row["runs"] == row["expected"] and p99 and p99["n"] == windows)


def bursts_complete(burst: dict, bursts: int, size: int) -> bool:
    """Every burst happened and every run of each started."""
    started, done = burst["started"], burst["all_started_s"]
    return (
        len(started) == bursts
        and all(count == size for count in started)
        and bool(done)
        and done["n"] == bursts
    )


# ---------------------------------------------------------------- per benchmark

NEXT_FIRE = ["next 1,000 fire times at least as fast as cronsim on every expression both read",
             "≥ 50× faster than a minute scan on `0 9 * * 1-5`"]  # fmt: skip
HOSTILE = [
    "worst Viewer request to the preview or builder: < 100 ms CPU",
    "… and < 200 KB returned",
]


def next_fire_comparison(cases: list[dict], peer: str = "cronsim") -> dict:
    """Each case against one peer: the peer's time ÷ Sillo Dash's where both ran and
    agreed, and which cases the peer does not read, differs on, or lacks figures for."""
    found: dict = {"ratios": {}, "unread": [], "differs": [], "gave_up": [], "missing": []}
    for case in cases:
        ours, theirs = case["systems"]["sillo"], case["systems"].get(peer, {})
        name = f"`{case['expression']}` {case['tz']}"
        if "median_ms" not in ours:
            found["missing"].append(name)
        elif "median_ms" in theirs:
            found["ratios"][name] = theirs["median_ms"] / ours["median_ms"]
        elif str(theirs.get("status", "")).startswith("unsupported"):
            found["unread"].append(name)
        elif str(theirs.get("status", "")).startswith("differs"):
            found["differs"].append(name)
        else:  # gave up (the scan's limit) or has no figures
            found["gave_up"].append(name)
    return found


def next_fire_targets(cases: list[dict]) -> list[list[str]]:
    """Against cronsim on every expression it reads (one it does not read is not a
    miss); a case where cronsim's fire times differ from Sillo Dash's, or Sillo
    Dash was not measured, leaves the target incomplete."""
    found = next_fire_comparison(cases)
    ratios = list(found["ratios"].values())
    complete = bool(ratios) and not (found["differs"] or found["missing"] or found["gave_up"])
    measured = (
        f"cronsim takes {min(ratios):.1f}× to {max(ratios):.1f}× as long on {len(ratios)} of "
        f"{len(cases)} expressions" if ratios else "no expression measured on both"
    )  # fmt: skip
    if found["unread"]:
        measured += f" (cronsim does not read {len(found['unread'])})"
    if found["differs"]:
        measured += "; not compared (fire times differ, or not measured): " + ", ".join(
            found["differs"]
        )
    if found["gave_up"]:
        measured += "; cronsim not measured: " + ", ".join(found["gave_up"])
    if found["missing"]:
        measured += "; Sillo Dash not measured: " + ", ".join(found["missing"])
    scan = next_fire_comparison(cases, "minute scan")["ratios"].get("`0 9 * * 1-5` UTC")
    return [
        [NEXT_FIRE[0], measured, verdict(bool(ratios) and min(ratios) >= 1, complete)],
        [NEXT_FIRE[1], ratio(scan, 1.0) if scan else NOT_MEASURED,
         verdict(None if scan is None else scan >= 50)],
    ]  # fmt: skip


def scheduler_targets(sched: dict) -> list[list[str]]:
    load_, shape, size = sched["load"], sched["shape"], sched["burst_size"]
    sizes = sorted(load_)
    at = 10_000 if 10_000 in load_ else sizes[-1]
    ours = load_[at].get("sillo")
    rows = []
    if ours:
        p99 = worst(ours["p99_ms"])
        complete = steady_complete(ours, shape["windows"])
        windows = ours["p99_ms"]["n"] if ours["p99_ms"] else 0
        measured = "–" if p99 is None else f"{p99:.1f} ms"
        measured += (
            f" (worst of {windows}/{shape['windows']} windows; "
            f"{ours['runs']}/{ours['expected']} runs)"
        )
        rows.append([f"p99 lateness under 100 ms at {at:,} schedules", measured,
                     verdict(None if p99 is None else p99 < 100, complete)])  # fmt: skip
    else:
        rows.append([f"p99 lateness under 100 ms at {at:,} schedules", NOT_MEASURED, INCOMPLETE])
    slowest, measured, complete = burst_figure(sched)
    rows.append([f"{size:,} runs due at once all started within 1 s", measured,
                 verdict(None if slowest is None else slowest < 1.0, complete)])  # fmt: skip
    idle = ours and ours["idle_cpu_percent"]
    expected_windows = shape["idle_windows"]
    rows.append(
        [
            f"idle CPU under 1% of a core at {at:,} schedules",
            f"{idle['max']:.2f}% (worst of {idle['n']}/{expected_windows} windows)"
            if idle
            else NOT_MEASURED,
            verdict(
                idle["max"] < 1 if idle else None, bool(idle) and idle["n"] == expected_windows
            ),
        ]
    )
    return rows


def slowest_burst(sched: dict) -> tuple[float | None, list[str]]:
    """The slowest burst at any size, and the sizes whose bursts did not all start."""
    load_, shape, size = sched["load"], sched["shape"], sched["burst_size"]
    slowest, short = None, []
    for n in sorted(load_):
        row = load_[n].get("sillo")
        if not row:
            short.append(f"{n:,}: not run")
            continue
        burst = row["burst"]
        if not bursts_complete(burst, shape["bursts"], size):
            short.append(f"{n:,}: {' + '.join(map(str, burst['started']))} of {size:,} started")
        value = worst(burst["all_started_s"])
        if value is not None:
            slowest = value if slowest is None else max(slowest, value)
    return slowest, short


def burst_figure(sched: dict) -> tuple[float | None, str, bool]:
    """The slowest burst at any size, as a target row states it, and whether every
    burst at every size completed."""
    slowest, short = slowest_burst(sched)
    measured = "–" if slowest is None else f"{slowest:.2f} s (slowest of every burst at every size)"
    if short:
        measured += f"; incomplete bursts at {'; '.join(short)}"
    return slowest, measured, not short


def hostile_targets(hostile: dict) -> list[list[str]]:
    cpu, size = hostile["worst_cpu_ms"], hostile["worst_bytes"]
    return [
        [HOSTILE[0], f"{cpu:.1f} ms", verdict(cpu < 100)],
        [HOSTILE[1], f"{size / 1024:.1f} KB", verdict(size < 200 * 1024)],
    ]


def targets(facts: dict) -> list[list[str]]:
    """Every target, each with its verdict; a benchmark with no figures leaves its
    targets incomplete rather than absent."""
    rows = []
    if facts.get("next_fire"):
        rows += next_fire_targets(facts["next_fire"]["cases"])
    else:
        rows += [[name, NOT_MEASURED, INCOMPLETE] for name in NEXT_FIRE]
    if facts.get("scheduler"):
        rows += scheduler_targets(facts["scheduler"])
    else:
        rows += [
            [name, NOT_MEASURED, INCOMPLETE]
            for name in ("p99 lateness under 100 ms at 10,000 schedules",
                         "1,000 runs due at once all started within 1 s",
                         "idle CPU under 1% of a core at 10,000 schedules")
        ]  # fmt: skip
    if facts.get("hostile"):
        rows += hostile_targets(facts["hostile"])
    else:
        rows += [[name, NOT_MEASURED, INCOMPLETE] for name in HOSTILE]
    return rows
