"""Next-fire benchmark: the next 1,000 fire times, side by side in one run.

Compares this engine with cronsim, croniter and a minute-by-minute scan on the
same expressions, start and zone, and prints the median time, the spread
(min-max over the repetitions) and the ratio to this engine. A peer that does
not read an expression is reported as such. Not a test: nothing here asserts.

    python bench/next_fire.py [--quick] [--json FILE]
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import benchmark_options, write_results  # noqa: E402
from croniter import croniter  # noqa: E402
from cronsim import CronSim  # noqa: E402

from schedules.timing import Cron  # noqa: E402
from schedules.timing.cronexpr import parse_cron  # noqa: E402

N = 1000
START = datetime(2026, 1, 1, tzinfo=UTC)
CASES = [
    ("* * * * *", "UTC"),
    ("*/5 * * * *", "America/New_York"),
    ("0 9 * * 1-5", "UTC"),
    ("0 9 * * 1-5", "Europe/Berlin"),
    ("30 2 * * *", "Europe/Berlin"),
    ("*/15 1-3 * * *", "Australia/Lord_Howe"),
    ("0 0 L * *", "UTC"),
    ("0 0 LW * *", "Europe/Berlin"),
    ("0 12 * * 5L", "America/New_York"),
    ("0 10 * * 1#3", "Europe/Berlin"),
    ("0 0 15W * *", "UTC"),
    ("0 0 13 * FRI", "UTC"),
    ("0 0 29 2 *", "UTC"),
]
# The scan tests every minute; past this many minutes it is not run.
SCAN_LIMIT_MINUTES = 3_000_000


def ours(expr: str, start: datetime) -> list[datetime]:
    return Cron(expr, start.tzinfo.key).preview(N, start)


def with_cronsim(expr: str, start: datetime) -> list[datetime]:
    it = CronSim(expr, start)
    return [next(it) for _ in range(N)]


def with_croniter(expr: str, start: datetime) -> list[datetime]:
    it = croniter(expr, start)
    return [it.get_next(datetime) for _ in range(N)]


def minute_scan(expr: str, start: datetime) -> list[datetime]:
    """The simplest correct design: test every real minute (wildcard DST rules)."""
    fields = parse_cron(expr)
    minutes, hours, months = set(fields.minutes), set(fields.hours), set(fields.months)
    zone = start.tzinfo
    found: list[datetime] = []
    instant = start.astimezone(UTC).replace(second=0, microsecond=0)
    step = timedelta(minutes=1)
    day_cache: dict = {}
    for _ in range(SCAN_LIMIT_MINUTES):
        instant += step
        local = instant.astimezone(zone)
        if local.minute in minutes and local.hour in hours and local.month in months:
            key = local.date()
            if key not in day_cache:
                first = key.replace(day=1)
                length = ((first + timedelta(days=32)).replace(day=1) - first).days
                days = fields.days(length, (first.weekday() + 1) % 7)
                day_cache[key] = key.day in days
            if day_cache[key]:
                found.append(local)
                if len(found) == N:
                    return found
    raise TimeoutError("scan limit")


SYSTEMS: dict[str, Callable[[str, datetime], list[datetime]]] = {
    "sillo": ours,
    "cronsim": with_cronsim,
    "croniter": with_croniter,
    "minute scan": minute_scan,
}


def reset() -> None:
    """The same cache state before every timed call of every library: Sillo Dash's
    parsed expressions are cached (lru_cache) and the peers parse on every call, so
    the cache is emptied and every repetition includes the parse, for all of them."""
    parse_cron.cache_clear()


def differs(found: list[datetime], expected: list[datetime]) -> str | None:
    """Where a peer's fire times first differ from Sillo Dash's (as instants), if anywhere."""
    for index, (theirs, ours_at) in enumerate(zip(found, expected, strict=False)):
        if theirs.timestamp() != ours_at.timestamp():
            return (
                f"differs (at #{index + 1}: {theirs.isoformat()}, Sillo Dash {ours_at.isoformat()})"
            )
    if len(found) != len(expected):
        return f"differs ({len(found)} fire times, Sillo Dash {len(expected)})"
    return None


def measure(
    fn: Callable, expr: str, start: datetime, repeats: int, expected: list[datetime] | None
) -> list[float] | str:
    """Timings of `repeats` calls after a warm-up call, or why there are none: the
    peer does not read the expression, gives up, or gives other fire times than
    Sillo Dash (then its speed is no comparison)."""
    limit = timedelta(minutes=SCAN_LIMIT_MINUTES)
    if fn is minute_scan and expected and expected[-1] - start > limit:
        # It would test every minute up to the last fire time: past the limit, so not run.
        return f"> {SCAN_LIMIT_MINUTES // 1_000_000}M minutes"
    reset()
    try:
        found = fn(expr, start)  # warm-up, and does the peer read it at all?
    except TimeoutError:
        return f"> {SCAN_LIMIT_MINUTES // 1_000_000}M minutes"
    except Exception as exc:  # a peer's own error type: it does not read this expression
        return f"unsupported: {type(exc).__name__}"
    if expected is not None and (where := differs(found, expected)):
        return where
    timings = []
    for _ in range(repeats):
        reset()
        began = time.perf_counter()
        fn(expr, start)
        timings.append(time.perf_counter() - began)
    return timings


def main() -> None:
    parser = benchmark_options(__doc__, quick="fewer repetitions")
    args = parser.parse_args()
    repeats = 2 if args.quick else 7
    scan_repeats = 1 if args.quick else 3

    print(f"next {N} fire times; Python {platform.python_version()}, {platform.machine()}")
    print(f"median of {repeats} runs (scan: {scan_repeats}) after one warm-up, ms [min-max]\n")
    header = f"{'expression':18} {'zone':20}" + "".join(f"{name:>30}" for name in SYSTEMS)
    print(header)
    results = []
    for expr, tz in CASES:
        start = START.astimezone(ZoneInfo(tz))
        row = {"expression": expr, "tz": tz, "systems": {}}
        base = None
        cells = []
        reset()
        expected = ours(expr, start)  # every peer's fire times are checked against these
        for name, fn in SYSTEMS.items():
            count = scan_repeats if name == "minute scan" else repeats
            timings = measure(fn, expr, start, count, None if name == "sillo" else expected)
            if isinstance(timings, str):
                row["systems"][name] = {"status": timings}
                cells.append(f"{timings:>30}")
                continue
            median = statistics.median(timings)
            if name == "sillo":
                base = median
            ratio = median / base if base else None
            row["systems"][name] = {
                "median_ms": median * 1000,
                "min_ms": min(timings) * 1000,
                "max_ms": max(timings) * 1000,
                "ratio_to_sillo": ratio,
            }
            text = f"{median * 1000:.2f} [{min(timings) * 1000:.1f}-{max(timings) * 1000:.1f}]"
            if name != "sillo" and ratio is not None:
                text += f" {ratio:.1f}x"
            cells.append(f"{text:>30}")
        results.append(row)
        print(f"{expr:18} {tz:20}" + "".join(cells))
    print("\nratio = peer median / sillo median (above 1: sillo is faster)")
    settings = {"n": N, "start": START.isoformat(), "repeats": repeats,
                "scan_repeats": scan_repeats, "quick": args.quick,
                "cache": "parse caches emptied before every call of every library",
                "checked": "each peer's fire times compared with Sillo Dash's first"}  # fmt: skip
    write_results(args.json, "next_fire", settings, {"cases": results})


if __name__ == "__main__":
    main()
