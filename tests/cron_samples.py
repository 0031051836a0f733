"""Random cron expressions for differential tests, by the syntax each peer supports."""

from __future__ import annotations

import random

MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


def _plain(
    rng: random.Random, lo: int, hi: int, names: list[str] | None = None, open_step: bool = True
) -> str:
    def value(v: int) -> str:
        if names and v - lo < len(names) and rng.random() < 0.3:
            return names[v - lo]
        return str(v)

    choice = rng.random()
    if choice < 0.25:
        return "*"
    if choice < 0.4:
        return f"*/{rng.randint(1, max(1, (hi - lo) // 2))}"
    if choice < 0.6:
        return value(rng.randint(lo, hi))
    if choice < 0.75:
        a = rng.randint(lo, hi - 1)
        b = rng.randint(a + 1, hi)
        # cronsim reads a one-value range with a step ("5-5/2") as "5/2";
        # Vixie cron and this engine read it as 5. Steps go on real ranges only.
        step = f"/{rng.randint(1, 5)}" if rng.random() < 0.3 else ""
        return f"{value(a)}-{value(b)}{step}"
    if choice < 0.85 and open_step:
        return f"{rng.randint(lo, hi)}/{rng.randint(1, 10)}"
    items = sorted({rng.randint(lo, hi) for _ in range(rng.randint(2, 4))})
    return ",".join(value(v) for v in items)


def expression(rng: random.Random, extended: set[str], croniter_safe: bool = False) -> str:
    """A random 5-field expression; `extended` picks among L, LW, W, nL, #.

    `croniter_safe` keeps to what croniter reads the Vixie way: it ORs the
    day fields unless one is exactly "*" (Vixie: unless one *starts* with
    "*"), ANDs `#` with the day of month, and counts day-of-week steps to 6
    with SUN as 7 at the end of a range.
    """
    minute = _plain(rng, 0, 59)
    hour = _plain(rng, 0, 23)
    month = _plain(rng, 1, 12, MONTHS)
    dom = _plain(rng, 1, 31)
    dow = _plain(rng, 0, 6, DAYS, open_step=False) if croniter_safe else _plain(rng, 0, 7, DAYS)
    roll = rng.random()
    if roll < 0.15 and "L" in extended:
        dom = "L"
    elif roll < 0.22 and "LW" in extended:
        dom = "LW"
    elif roll < 0.30 and "W" in extended:
        dom = f"{rng.randint(1, 31)}W"
    elif roll < 0.40 and "nL" in extended:
        dow = f"{rng.randint(0, 7)}L"
    elif roll < 0.50 and "#" in extended:
        dow = f"{rng.randint(0, 6 if croniter_safe else 7)}#{rng.randint(1, 5)}"
        if croniter_safe:
            dom = "*"
    elif roll < 0.65:
        dom = "*"
    elif roll < 0.80:
        dow = "*"
    if croniter_safe:
        dom = "*" if dom.startswith("*") else dom
        dow = "*" if dow.startswith("*") else dow
    return f"{minute} {hour} {dom} {month} {dow}"
