"""A server-rendered SVG chart of run durations, coloured by outcome."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Run

WIDTH, HEIGHT, PAD = 640, 160, 24


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
