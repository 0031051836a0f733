"""Charts drawn on the server as SVG: run durations, outcome strips, and 30 days per schedule.

Why server-side SVG and not a charting library: the pages must work without
JavaScript and under the app's CSP (no inline scripts), the charts are small
(at most 30 points a series, 20 cells a strip), and a template renders them
in the same request with no extra asset to vendor and audit. Each chart has
a text alternative (an aria-label summary and a table of its numbers), and
outcomes are told apart by a glyph as well as by colour, in the Okabe-Ito
palette that reads for the common kinds of colour blindness (docs/dashboard.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date

from ..choices import RunStatus
from ..models import Run
from ..run_history import RunHistory

WIDTH, HEIGHT, PAD = 640, 160, 24
# The charts over days sit three to a row: a smaller canvas keeps their text legible.
DAY_WIDTH, DAY_HEIGHT = 360, 170
GLYPHS = {
    RunStatus.SUCCEEDED: "✓", RunStatus.FAILED: "✕", RunStatus.TIMED_OUT: "⧗",
    RunStatus.INTERRUPTED: "!", RunStatus.CANCELLED: "–", RunStatus.SKIPPED: "·",
}  # fmt: skip


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    status: str
    title: str


def duration_bars(runs: list[Run]) -> tuple[list[Bar], float]:
    """Bars oldest to newest; returns (bars, the longest duration in seconds)."""
    timed = [r for r in reversed(runs) if r.duration is not None]
    if not timed:
        return [], 0.0
    longest = max(r.duration.total_seconds() for r in timed) or 1.0
    step = (WIDTH - 2 * PAD) / len(timed)
    bars = []
    for i, run in enumerate(timed):
        seconds = run.duration.total_seconds()
        height = max(2.0, (HEIGHT - 2 * PAD) * seconds / longest)
        bars.append(
            Bar(
                x=PAD + i * step,
                y=HEIGHT - PAD - height,
                width=min(max(1.0, step * 0.8), 28.0),
                height=height,
                status=run.status,
                title=f"#{run.pk} {run.status} {seconds:.3f}s",
            )
        )
    return bars, longest


# ---------------------------------------------------------------- outcome strip


@dataclass
class Cell:
    run_id: int
    status: str
    glyph: str
    title: str


@dataclass
class Strip:
    cells: list[Cell]

    @property
    def summary(self) -> str:
        """The strip in words, for screen readers and as the tooltip of the whole."""
        if not self.cells:
            return "no finished runs yet"
        counts: dict[str, int] = {}
        for cell in self.cells:
            counts[cell.status] = counts.get(cell.status, 0) + 1
        parts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items())
        return f"last {len(self.cells)} outcomes, oldest first: {parts}"


def outcome_strip(runs: list[Run]) -> Strip:
    """Cells oldest to newest: a colour and a glyph per outcome, the run in the title."""
    cells = []
    for run in runs:
        when = run.finished_at or run.queued_at
        duration = f" in {run.duration.total_seconds():.3f}s" if run.duration else ""
        cells.append(
            Cell(
                run_id=run.pk,
                status=run.status,
                glyph=GLYPHS.get(run.status, "?"),
                title=f"#{run.pk} {run.status.replace('_', ' ')}{duration}, "
                f"{when:%Y-%m-%d %H:%M:%S}",
            )
        )
    return Strip(cells)


# ---------------------------------------------------------------- 30 days


@dataclass
class Day:
    day: date
    runs: int = 0
    succeeded: int = 0
    errors: int = 0
    rate: float | None = None  # succeeded / (succeeded + errors), percent
    p50: float | None = None  # duration, seconds
    p95: float | None = None
    late50: float | None = None  # started after the slot, seconds
    late95: float | None = None


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank percentile (an observed value, never an interpolated one)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def daily(history: RunHistory) -> list[Day]:
    """Per day of the history, oldest first: runs, success rate, duration and lateness
    p50/p95. Skipped, cancelled and interrupted runs count as runs; the rate is
    successes among the runs that ran to an outcome (succeeded, failed, timed out)."""
    table = []
    for day in history.days:
        row = Day(day, *history.counts.get(day, (0, 0, 0)))
        decided = row.succeeded + row.errors
        row.rate = 100 * row.succeeded / decided if decided else None
        durations, lateness = history.durations.get(day, []), history.lateness.get(day, [])
        row.p50, row.p95 = percentile(durations, 50), percentile(durations, 95)
        row.late50, row.late95 = percentile(lateness, 50), percentile(lateness, 95)
        table.append(row)
    return table


@dataclass
class Series:
    name: str
    css: str
    points: str  # SVG polyline points
    dots: list[tuple[float, float, str]]  # x, y, title


@dataclass
class DayChart:
    """One chart over the days: bars (a rate) or lines (p50 and p95)."""

    label: str
    unit: str
    top: float
    bars: list[Bar]
    series: list[Series]
    first: date
    last: date
    width: int = DAY_WIDTH
    height: int = DAY_HEIGHT

    @property
    def base(self) -> int:
        return self.height - PAD

    @property
    def right(self) -> int:
        return self.width - PAD

    @property
    def top_text(self) -> str:
        return f"{self.top:.0f}{self.unit}" if self.unit == "%" else f"{self.top:.3g} {self.unit}"


def _x(i: int, count: int) -> float:
    return PAD + (i + 0.5) * (DAY_WIDTH - 2 * PAD) / count


def _y(value: float, top: float) -> float:
    return DAY_HEIGHT - PAD - (DAY_HEIGHT - 2 * PAD) * (value / top if top else 0)


def rate_chart(days: list[Day]) -> DayChart:
    """Bars of the daily success rate: ok (no error), mixed, bad (under half)."""
    step = (DAY_WIDTH - 2 * PAD) / len(days)
    bars = []
    for i, day in enumerate(days):
        if day.rate is None:
            continue
        y = _y(day.rate, 100)
        kind = "ok" if day.errors == 0 else "bad" if day.rate < 50 else "mixed"
        decided = day.succeeded + day.errors
        bars.append(
            Bar(
                x=PAD + i * step + step * 0.1,
                y=min(y, DAY_HEIGHT - PAD - 3.0),
                width=step * 0.8,
                height=max(3.0, DAY_HEIGHT - PAD - y),  # 0% still shows
                status=kind,
                title=f"{day.day:%Y-%m-%d}: {day.rate:.0f}% ({day.succeeded} of {decided})",
            )
        )
    return DayChart("Success rate per day", "%", 100, bars, [], days[0].day, days[-1].day)


def line_chart(days: list[Day], *, label: str, low: str, high: str) -> DayChart:
    """p50 and p95 of one measure (`low`, `high`: Day attribute names), in seconds."""
    values = [getattr(d, name) for d in days for name in (low, high)]
    top = max((v for v in values if v is not None), default=0.0) or 1.0
    series = []
    for name, css in ((low, "p50"), (high, "p95")):
        dots = []
        for i, day in enumerate(days):
            value = getattr(day, name)
            if value is not None:
                dots.append((_x(i, len(days)), _y(value, top),
                             f"{day.day:%Y-%m-%d} {css}: {value:.3f} s"))  # fmt: skip
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in dots)
        series.append(Series(css, css, points, dots))
    return DayChart(label, "s", top, [], series, days[0].day, days[-1].day)


def history_charts(history: RunHistory) -> dict:
    """The schedule page's charts over the history's days, and the numbers behind them."""
    table = daily(history)
    return {
        "sampled": history.sampled,
        "days": table,
        "has_runs": any(day.runs for day in table),
        "rate": rate_chart(table),
        "duration": line_chart(table, label="Duration per day", low="p50", high="p95"),
        "lateness": line_chart(table, label="Lateness per day", low="late50", high="late95"),
    }
