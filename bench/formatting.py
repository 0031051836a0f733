"""Formatting shared by the report's sections and its reading: spreads, ratios, tables."""

from __future__ import annotations

import json
from pathlib import Path


def spread(figure: dict | None, digits: int = 1) -> str:
    """median [min–max] of a repeated measurement."""
    if not figure:
        return "–"
    if figure["min"] == figure["max"]:
        return f"{figure['median']:,.{digits}f}"
    return (
        f"{figure['median']:,.{digits}f} [{figure['min']:,.{digits}f}–{figure['max']:,.{digits}f}]"
    )


def whole(value: float | None) -> str:
    """A figure to the unit with thousands separated, or a dash when not measured."""
    return "–" if value is None else f"{value:,.0f}"


def worst_p99(phase: dict) -> str:
    """A steady phase's worst-window p99 lateness in ms, or a dash."""
    return "–" if not phase.get("p99_ms") else f"{phase['p99_ms']['max']:.1f}"


def median(figure: dict | None) -> float | None:
    return figure["median"] if figure else None


def ratio(peer: float | None, ours: float | None) -> str:
    """The peer's figure ÷ Sillo Dash's, for figures where less is better (time,
    lateness): above 1 always means Sillo Dash is better. Every ratio in the report
    goes this way; a rate is compared through its time."""
    if peer is None or ours is None or ours == 0:
        return "–"
    value = peer / ours
    return f"{value:,.0f}×" if value >= 100 else f"{value:.2f}×" if value < 10 else f"{value:.1f}×"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def load(results: Path, name: str) -> dict | None:
    path = results / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None
