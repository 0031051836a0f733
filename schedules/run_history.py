"""A schedule's last days for its page: each day's counts, and the runs behind its percentiles.

The counts (runs, successes, errors per day) are summed from the run tallies
(run_tallies.py): exact, however many runs. The percentiles (duration and
lateness, p50 and p95 per day) need the runs themselves. A day with up to
SAMPLE_PER_DAY finished runs is read whole. A busier day is read in STRETCHES
stretches of STRETCH consecutive runs, placed by its quarters' tallies at equal
steps through the day's runs counted in time order (systematic sampling; the
first step's start moves from day to day), each quarter's runs taken as spread
evenly over it: a stretch is the STRETCH runs queued last before its end. So
every run of a day has about the same chance to be read, in quiet hours as in
busy ones, and a burst queued at one instant is read like any other runs.

Why stretches, and not a draw over every run (an id scrambled, one in k kept):
a draw still walks all the schedule's runs of the 30 days, 30 ms of SQLite and
the heap of PostgreSQL for 100,000 runs, growing with them. A stretch is one
index seek (run_history_idx) for STRETCH rows, all of them in one query, so
the page reads about 3,000 runs whether the schedule keeps 100,000 or millions.
The price: consecutive runs resemble each other more than random ones do, so a
busy day's p95 rests on ten stretches rather than a hundred independent runs;
the page says its percentiles are sampled (docs/dashboard.md).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from django.db import connection

from . import run_tallies
from .choices import FINISHED
from .models import Run, Schedule

SAMPLE_PER_DAY = 100  # a day's runs read for its percentiles, about
STRETCH = 10  # consecutive runs a stretch
STRETCHES = SAMPLE_PER_DAY // STRETCH
# The first stretch's place within the step, by the day (the golden ratio's fraction
# spreads consecutive days' places evenly): the same on every visit to the page.
_SPREAD = 0.6180339887


@dataclass(frozen=True)
class Span:
    """Runs to read: queued from `since` until `until` (Unix seconds), all of them
    (a whole day) or only the last STRETCH (a stretch)."""

    since: float
    until: float
    whole: bool


@dataclass
class RunHistory:
    """A schedule's finished runs over some days, for the schedule page's charts."""

    days: list[date]  # oldest first, in the operator's zone
    counts: dict[date, tuple[int, int, int]]  # day -> (runs, succeeded, errors), exact
    durations: dict[date, list[float]]  # seconds, of the runs read: all, or stretches
    lateness: dict[date, list[float]]  # seconds from the slot to the start, of the same
    sampled: bool  # some day's percentiles are over stretches of its runs, not all


def run_history(schedule: Schedule, *, days: list[date], zone: tzinfo) -> RunHistory:
    """A schedule's finished runs over `days` (in `zone`, oldest first): two queries,
    the days' tallies and one read of their stretches, however many runs."""
    starts = [datetime.combine(day, time.min, tzinfo=zone) for day in days]
    starts.append(datetime.combine(days[-1] + timedelta(days=1), time.min, tzinfo=zone))
    bounds = [start.timestamp() for start in starts]
    tallies = run_tallies.per_day(schedule.pk, starts)
    spans: list[Span] = []
    for index, tally in tallies.items():
        spans += spans_of(
            tally, bounds[index], bounds[index + 1], turn=days[index].toordinal() * _SPREAD
        )
    history = RunHistory(
        days=days,
        counts={days[index]: tally.counts for index, tally in tallies.items()},
        durations={},
        lateness={},
        sampled=any(tally.runs > SAMPLE_PER_DAY for tally in tallies.values()),
    )
    for started, duration, late in _read(schedule.pk, spans):
        index = bisect.bisect_right(bounds, started) - 1
        if not 0 <= index < len(days):
            continue  # queued on the day, started after it
        if duration is not None:
            history.durations.setdefault(days[index], []).append(duration)
        if late is not None:
            history.lateness.setdefault(days[index], []).append(max(0.0, late))
    return history


def spans_of(
    tally: run_tallies.DayTally, since: float, until: float, *, turn: float = 0.0
) -> list[Span]:
    """What to read of a day (from `since` until `until`) for its percentiles: the
    whole day, or its STRETCHES stretches (`turn`'s fraction places the first)."""
    if tally.runs <= SAMPLE_PER_DAY:
        return [Span(since, until, whole=True)]
    ends, total = [], 0  # the runs counted up to each quarter's end
    for _, runs in tally.quarters:
        total += runs
        ends.append(total)

    def moment(position: float) -> float:
        """When the day's run at `position` (counted from 0, in time order) started."""
        i = bisect.bisect_right(ends, position)
        if i == len(ends):
            return until
        quarter, runs = tally.quarters[i]
        return (quarter + (position - (ends[i] - runs)) / runs) * run_tallies.QUARTER

    step = total / STRETCHES
    first = step * (turn % 1.0)
    return [
        Span(since, min(until, moment(first + number * step + STRETCH)), whole=False)
        for number in range(STRETCHES)
    ]


def _read(schedule_id: int, spans: list[Span]) -> list[tuple[float, float | None, float | None]]:
    """(started, duration, lateness) in seconds (started as Unix time) of the
    schedule's finished runs that started, in each span: each run once.

    One query, a nested loop over the spans with an index seek each: on PostgreSQL
    a LATERAL join over arrays of the spans, on SQLite a join from a VALUES list
    (a stretch's runs through a correlated IN with a LIMIT). Raw SQL because the
    ORM has neither: the shapes it has cost more per span (a UNION ALL of 300
    LIMITed reads took 23 ms on SQLite and 131 ms to plan on PostgreSQL; an OR of
    300 ranges, 32 ms and 1.5 s) against a few ms here. The database does the
    arithmetic: turning 12,000 stored times into datetimes took half the read.
    Other databases keep no tallies (check W012), so there is nothing to place.
    """
    if not spans or connection.vendor not in ("postgresql", "sqlite"):
        return []
    reader = _read_postgresql if connection.vendor == "postgresql" else _read_sqlite
    sql, params = reader(schedule_id, spans, connection.ops.quote_name(Run._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = {pk: times for pk, *times in cursor.fetchall()}  # stretches may meet
    if connection.vendor == "postgresql":
        return list(rows.values())
    return [_from_text(*times) for times in rows.values()]


def _read_postgresql(schedule_id: int, spans: list[Span], runs: str) -> tuple[str, list]:
    sql = (
        "SELECT id, date_part('epoch', started_at), date_part('epoch', finished_at - started_at),"
        " date_part('epoch', started_at - slot)"
        " FROM unnest(%s::timestamptz[], %s::timestamptz[], %s::int[]) AS s(since, until, take)"
        " CROSS JOIN LATERAL (SELECT id, started_at, finished_at, slot"
        f" FROM {runs} WHERE schedule_id = %s AND status = ANY(%s)"
        " AND started_at IS NOT NULL AND queued_at >= s.since AND queued_at < s.until"
        " ORDER BY queued_at DESC LIMIT s.take) AS r"
    )
    return sql, [
        [datetime.fromtimestamp(span.since, UTC) for span in spans],
        [datetime.fromtimestamp(span.until, UTC) for span in spans],
        [None if span.whole else STRETCH for span in spans],  # LIMIT NULL: all
        schedule_id,
        sorted(FINISHED),
    ]


def _read_sqlite(schedule_id: int, spans: list[Span], runs: str) -> tuple[str, list]:
    # As text: an expression has no declared type, so Django's converter is not called.
    times = "CAST(r.started_at AS TEXT), CAST(r.finished_at AS TEXT), CAST(r.slot AS TEXT)"
    marks = ", ".join(["%s"] * len(FINISHED))
    among = "{0}.status IN (" + marks + ") AND {0}.started_at IS NOT NULL"  # of a run alias
    sql = (
        f"WITH s(since, until, whole) AS (VALUES {', '.join(['(%s, %s, %s)'] * len(spans))})"
        f" SELECT r.id, {times} FROM s JOIN {runs} AS r ON s.whole AND r.schedule_id = %s"
        f" AND {among.format('r')} AND r.queued_at >= s.since AND r.queued_at < s.until"
        f" UNION ALL SELECT r.id, {times} FROM s JOIN {runs} AS r ON NOT s.whole AND r.id IN ("
        f"SELECT x.id FROM {runs} AS x WHERE x.schedule_id = %s AND {among.format('x')}"
        " AND x.queued_at >= s.since AND x.queued_at < s.until"
        f" ORDER BY x.queued_at DESC LIMIT {STRETCH})"
    )
    adapt = connection.ops.adapt_datetimefield_value
    bounds = [
        value
        for span in spans
        for value in (
            adapt(datetime.fromtimestamp(span.since, UTC)),
            adapt(datetime.fromtimestamp(span.until, UTC)),
            span.whole,
        )
    ]
    return sql, [*bounds, schedule_id, *sorted(FINISHED), schedule_id, *sorted(FINISHED)]


_EPOCH = datetime(1970, 1, 1)  # naive, as SQLite's stored UTC text parses


def _from_text(
    started: str, finished: str | None, slot: str | None
) -> tuple[float, float | None, float | None]:
    """(started, duration, lateness) in seconds from SQLite's stored text, exactly.
    (Naive datetimes: making each aware cost more than reading it; SQLite's own date
    functions are slower still and keep only milliseconds.)"""
    start = datetime.fromisoformat(started)
    end = finished and datetime.fromisoformat(finished)
    due = slot and datetime.fromisoformat(slot)
    return (
        (start - _EPOCH).total_seconds(),
        (end - start).total_seconds() if end else None,
        (start - due).total_seconds() if due else None,
    )
