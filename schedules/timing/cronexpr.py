"""Parsing of five-field cron expressions into the sets the iterator jumps over.

The grammar is Vixie/Debian cron plus the Quartz-style extensions operators
expect: ``L``, ``LW`` and ``NW`` in day-of-month, ``nL`` and ``N#M`` in
day-of-week, ``?`` as ``*`` in the day fields, month and day names, and the
``@`` macros. Whether a day matches depends only on the month's length and the
weekday of its first day, so matching days are computed once per (length,
weekday) pair, at most 28 patterns per expression.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass, field
from functools import lru_cache

from .errors import InvalidTrigger

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

# A hard ceiling for any caller; specs from users are held to Limits.max_text first.
MAX_EXPRESSION = 1024

MONTH_NAMES = {name: i for i, name in enumerate(calendar.month_abbr) if name}
MONTH_NAMES = {name.upper(): i for name, i in MONTH_NAMES.items()}
DAY_NAMES = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}


@dataclass(frozen=True)
class _Field:
    name: str
    lo: int
    hi: int
    names: dict[str, int] = field(default_factory=dict)


MINUTE = _Field("minute", 0, 59)
HOUR = _Field("hour", 0, 23)
DAY_OF_MONTH = _Field("day-of-month", 1, 31)
MONTH = _Field("month", 1, 12, MONTH_NAMES)
DAY_OF_WEEK = _Field("day-of-week", 0, 7, DAY_NAMES)

# Feb can have 28 or 29 days; every (month length, first weekday) pair occurs
# in the Gregorian calendar, so a pattern that is empty for all of a month's
# possible pairs never fires.
_MONTH_LENGTHS = {m: (28, 29) if m == 2 else (calendar.mdays[m],) for m in range(1, 13)}


@dataclass(frozen=True)
class CronFields:
    """A parsed expression: sorted minutes and hours, months, and day rules."""

    expression: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: tuple[int, ...]
    dom_days: frozenset[int]
    dom_last: bool
    dom_last_weekday: bool
    dom_nearest_weekday: frozenset[int]
    dow_days: frozenset[int]
    dow_last: frozenset[int]
    dow_nth: frozenset[tuple[int, int]]
    dom_star: bool
    dow_star: bool
    fixed_time: bool
    _patterns: dict[tuple[int, int], tuple[int, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def days(self, length: int, first_dow: int) -> tuple[int, ...]:
        """Matching days of a month with `length` days starting on `first_dow` (0=Sun)."""
        key = (length, first_dow)
        pattern = self._patterns.get(key)
        if pattern is None:
            pattern = self._patterns[key] = self._compute_days(length, first_dow)
        return pattern

    def _compute_days(self, length: int, first_dow: int) -> tuple[int, ...]:
        def dow(day: int) -> int:
            return (first_dow + day - 1) % 7

        dom = {d for d in self.dom_days if d <= length}
        if self.dom_last:
            dom.add(length)
        if self.dom_last_weekday:
            dom.add(_nearest_weekday(length, length, dow(length)))
        for n in self.dom_nearest_weekday:
            if n <= length:
                dom.add(_nearest_weekday(n, length, dow(n)))

        by_dow = set()
        for day in range(1, length + 1):
            wd = dow(day)
            if (
                wd in self.dow_days
                or (wd in self.dow_last and day + 7 > length)
                or (wd, (day + 6) // 7) in self.dow_nth
            ):
                by_dow.add(day)

        # Vixie cron: if either day field starts with "*", both must match;
        # otherwise a day matches if either field does.
        days = dom & by_dow if self.dom_star or self.dow_star else dom | by_dow
        return tuple(sorted(days))

    def never_fires(self) -> bool:
        return not any(
            self.days(length, first_dow)
            for month in self.months
            for length in _MONTH_LENGTHS[month]
            for first_dow in range(7)
        )


def _nearest_weekday(day: int, length: int, dow: int) -> int:
    """The weekday nearest to `day` within the same month (Quartz `W`)."""
    if dow == 6:  # Saturday: the Friday before, or the Monday after on the 1st
        return day - 1 if day > 1 else day + 2
    if dow == 0:  # Sunday: the Monday after, or the Friday before on the last day
        return day + 1 if day < length else day - 2
    return day


def _is_number(text: str) -> bool:
    """ASCII digits only: str.isdigit() also accepts '²' and other digits int() refuses."""
    return text.isascii() and text.isdigit()


def _number(text: str) -> int:
    # Leading zeros aside, no field value has more than a few digits; a long run of
    # digits is out of range without converting it (int() refuses 4,300+ digits).
    stripped = text.lstrip("0") or "0"
    return int(stripped) if len(stripped) <= 6 else 10**6


def _value(text: str, f: _Field) -> int:
    if text.upper() in f.names:
        return f.names[text.upper()]
    if not _is_number(text):
        raise InvalidTrigger(f"{f.name} '{text}' is not a number" + (" or name" if f.names else ""))
    value = _number(text)
    if not f.lo <= value <= f.hi:
        raise InvalidTrigger(f"{f.name} {value} is out of range {f.lo}-{f.hi}")
    return value


def _step(text: str, f: _Field) -> int:
    if not _is_number(text):
        raise InvalidTrigger(f"{f.name} step '{text}' is not a number")
    step = _number(text)
    if step < 1:
        raise InvalidTrigger(f"{f.name} step {step} must be at least 1")
    return step


def _range(term: str, f: _Field, wildcards: tuple[str, ...]) -> range:
    """A plain term: `*`, `N`, `N-M`, each optionally with `/S`."""
    base, slash, step_text = term.partition("/")
    step = _step(step_text, f) if slash else 1
    if base in wildcards:
        return range(f.lo, f.hi + 1, step)
    start_text, dash, end_text = base.partition("-")
    start = _value(start_text, f)
    if dash:
        end = _value(end_text, f)
        if end < start:
            raise InvalidTrigger(f"{f.name} range {start_text}-{end_text} is backwards")
        return range(start, end + 1, step)
    if slash:  # N/S means from N to the end of the range, every S
        return range(start, f.hi + 1, step)
    return range(start, start + 1)


def _terms(text: str, f: _Field) -> list[str]:
    terms = text.split(",")
    if any(t == "" for t in terms):
        raise InvalidTrigger(f"{f.name} '{text}' has an empty list item")
    return terms


def _plain_field(text: str, f: _Field) -> tuple[int, ...]:
    values: set[int] = set()
    for term in _terms(text, f):
        values.update(_range(term, f, ("*",)))
    return tuple(sorted(values))


@lru_cache(maxsize=4096)
def parse_cron(expression: str) -> CronFields:
    """Parse and validate an expression; raise InvalidTrigger naming the field."""
    if not isinstance(expression, str):
        raise InvalidTrigger("cron expression must be a string")
    if len(expression) > MAX_EXPRESSION:
        raise InvalidTrigger(f"cron expression is longer than {MAX_EXPRESSION} characters")
    text = " ".join(expression.split())
    if not text:
        raise InvalidTrigger("cron expression is empty")
    if text.startswith("@"):
        macro = MACROS.get(text.lower())
        if macro is None:
            known = ", ".join(MACROS)
            raise InvalidTrigger(f"unknown cron macro '{text}' (known: {known})")
        text = macro
    parts = text.split(" ")
    if len(parts) != 5:
        raise InvalidTrigger(
            "cron expression needs 5 fields (minute hour day-of-month month day-of-week), "
            f"got {len(parts)}"
        )
    minute, hour, dom, month, dow = parts

    dom_days: set[int] = set()
    dom_last = dom_last_weekday = False
    nearest: set[int] = set()
    for term in _terms(dom.upper(), DAY_OF_MONTH):
        if term == "L":
            dom_last = True
        elif term == "LW":
            dom_last_weekday = True
        elif term.endswith("W"):
            day = term[:-1]
            if not _is_number(day):
                raise InvalidTrigger(
                    f"day-of-month '{term}': W needs a single day, as in 15W (or LW)"
                )
            nearest.add(_value(day, DAY_OF_MONTH))
        elif "L" in term or "W" in term:
            raise InvalidTrigger(f"day-of-month '{term}' is not valid (use L, LW or NW)")
        else:
            dom_days.update(_range(term, DAY_OF_MONTH, ("*", "?")))

    dow_days: set[int] = set()
    dow_last: set[int] = set()
    dow_nth: set[tuple[int, int]] = set()
    for term in _terms(dow.upper(), DAY_OF_WEEK):
        if term.endswith("L") and term != "L":
            dow_last.add(_value(term[:-1], DAY_OF_WEEK) % 7)
        elif "#" in term:
            day_text, _, nth_text = term.partition("#")
            day = _value(day_text, DAY_OF_WEEK) % 7
            if not _is_number(nth_text) or not 1 <= _number(nth_text) <= 5:
                raise InvalidTrigger(f"day-of-week '{term}': the number after # must be 1-5")
            dow_nth.add((day, _number(nth_text)))
        elif term == "L":
            raise InvalidTrigger("day-of-week 'L' needs a day before it, as in 5L (last Friday)")
        else:
            dow_days.update(v % 7 for v in _range(term, DAY_OF_WEEK, ("*", "?")))

    fields = CronFields(
        expression=text.upper(),
        minutes=_plain_field(minute, MINUTE),
        hours=_plain_field(hour, HOUR),
        months=_plain_field(month, MONTH),
        dom_days=frozenset(dom_days),
        dom_last=dom_last,
        dom_last_weekday=dom_last_weekday,
        dom_nearest_weekday=frozenset(nearest),
        dow_days=frozenset(dow_days),
        dow_last=frozenset(dow_last),
        dow_nth=frozenset(dow_nth),
        dom_star=dom.startswith(("*", "?")),
        dow_star=dow.startswith(("*", "?")),
        # Debian cron treats a job as "fixed time" unless the minute or hour
        # field starts with "*": that decides how daylight saving is handled.
        fixed_time=not minute.startswith("*") and not hour.startswith("*"),
    )
    if fields.never_fires():
        raise InvalidTrigger(
            f"'{expression.strip()}' never fires: no day matches in the months given"
        )
    return fields
