"""Differential tests: the engine against cronsim and croniter, and a minute scan.

Thousands of random expressions (fixed seeds), in UTC and in zones with
daylight saving; the next 50 fire times must be equal. Where a peer reads
the syntax differently, the generator stays inside what both read the same
way (tests/cron_samples.py says why); where a peer is wrong, the comparison
stops before the case and an exact minute-by-minute scan checks it instead.
See docs/timing.md for the known differences.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from cronsim import CronSim, CronSimError

from schedules.timing import Cron, InvalidTrigger
from tests.cron_samples import expression

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]
FIRES = 50
CHUNKS = 10
PER_CHUNK = 300  # 3,000 expressions per peer


def random_start(rng: random.Random, zone: ZoneInfo) -> datetime:
    """A start in 2020-2030, outside a repeated hour (cronsim rewinds there)."""
    while True:
        instant = datetime(2020, 1, 1, tzinfo=UTC) + timedelta(
            seconds=rng.randint(0, 10 * 365 * 86400)
        )
        local = instant.astimezone(zone)
        if local.replace(fold=0).utcoffset() == local.replace(fold=1).utcoffset():
            return local


def transition_day(zone: ZoneInfo, day: date) -> bool:
    start = datetime(day.year, day.month, day.day, tzinfo=zone)
    end = datetime.combine(day + timedelta(days=1), start.timetz())
    return start.utcoffset() != end.utcoffset()


def until_transition(times: list[datetime], zone: ZoneInfo) -> list[datetime]:
    for i, t in enumerate(times):
        if transition_day(zone, t.date()):
            return times[:i]
    return times


def iso(times: list[datetime]) -> list[str]:
    return [t.isoformat() for t in times]


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_same_fire_times_as_cronsim(chunk: int) -> None:
    rng = random.Random(1000 + chunk)
    compared = 0
    for _ in range(PER_CHUNK):
        expr = expression(rng, {"L", "LW", "nL", "#"})
        tz = rng.choice(ZONES)
        zone = ZoneInfo(tz)
        start = random_start(rng, zone)
        try:
            ours_trigger = Cron(expr, tz)
        except InvalidTrigger:
            # Only expressions that can never fire are refused; cronsim gives up on them.
            with pytest.raises((CronSimError, StopIteration)):
                next(CronSim(expr, start))
            continue
        it = CronSim(expr, start)
        theirs = [next(it) for _ in range(FIRES)]
        ours = ours_trigger.preview(FIRES, start)
        if tz == "Australia/Lord_Howe" and not ours_trigger.fields.fixed_time:
            # cronsim steps hours in whole hours of UTC, which lands on :30
            # after Lord Howe's half-hour shift; test_every_real_instant covers it.
            ours, theirs = until_transition(ours, zone), until_transition(theirs, zone)
            theirs = theirs[: len(ours)]
            ours = ours[: len(theirs)]
        assert iso(ours) == iso(theirs), (expr, tz, start.isoformat())
        compared += 1
    assert compared > PER_CHUNK * 0.9


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_same_fire_times_as_croniter(chunk: int) -> None:
    rng = random.Random(2000 + chunk)
    for _ in range(PER_CHUNK):
        expr = expression(rng, {"L", "#"}, croniter_safe=True)
        tz = rng.choice(ZONES)
        zone = ZoneInfo(tz)
        start = random_start(rng, zone)
        try:
            ours = Cron(expr, tz).preview(FIRES, start)
        except InvalidTrigger:
            continue
        it = croniter(expr, start)
        theirs = [it.get_next(datetime) for _ in range(FIRES)]
        if tz != "UTC":
            # croniter runs a fixed-time job twice in a repeated hour, and at
            # :30 of a Lord Howe gap: compare up to the first transition day.
            ours = until_transition(ours, zone)
            theirs = theirs[: len(ours)]
        assert iso(ours) == iso(theirs), (expr, tz, start.isoformat())


def transitions(zone: ZoneInfo) -> list[date]:
    days = []
    day = date(2020, 1, 1)
    while day.year < 2031:
        if transition_day(zone, day):
            days.append(day)
        day += timedelta(days=1)
    return days


@pytest.mark.parametrize("tz", ZONES[1:])
def test_every_real_instant_matches_on_transition_days(tz: str) -> None:
    """Wildcard-hour jobs against a scan of every real minute, across DST days."""
    zone = ZoneInfo(tz)
    rng = random.Random(tz)
    days = transitions(zone)
    checked = 0
    while checked < 100:
        expr = expression(rng, {"L", "LW", "nL", "#"})
        try:
            trigger = Cron(expr, tz)
        except InvalidTrigger:
            continue
        if trigger.fields.fixed_time:
            continue
        day = rng.choice(days)
        start = datetime(day.year, day.month, day.day, tzinfo=zone) - timedelta(hours=3)
        end = start + timedelta(hours=30)
        expected = _scan(expr, start, end)
        ours = []
        for t in trigger.iter_fires(start):
            if t.astimezone(UTC) > end.astimezone(UTC):
                break
            ours.append(t)
        assert iso(ours) == iso(expected), (expr, tz, start.isoformat())
        checked += 1


def _scan(expr: str, start: datetime, end: datetime) -> list[datetime]:
    """Every real minute in (start, end] whose wall-clock time matches (cronsim's sets)."""
    sets = CronSim(expr, datetime(2020, 1, 1))
    zone = start.tzinfo
    found = []
    instant = start.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    while instant <= end:
        local = instant.astimezone(zone)
        if (
            local.minute in sets.minutes
            and local.hour in sets.hours
            and local.month in sets.months
            and sets.match_day(local.date())
        ):
            found.append(local)
        instant += timedelta(minutes=1)
    return found


def test_generated_expressions_cover_the_syntax() -> None:
    """The samples exercise every feature, so the comparisons mean something."""
    rng = random.Random(1000)
    seen = set()
    for _ in range(PER_CHUNK):
        expr = expression(rng, {"L", "LW", "nL", "#"})
        fields = expr.split()
        for feature, present in {
            "L": fields[2] == "L",
            "LW": fields[2] == "LW",
            "nL": fields[4].endswith("L"),
            "#": "#" in fields[4],
            "step": "/" in expr,
            "range": "-" in expr,
            "list": "," in expr,
            "name": any(c.isalpha() for c in fields[3] + fields[4]),
            "or-rule": not fields[2].startswith("*") and not fields[4].startswith("*"),
        }.items():
            if present:
                seen.add(feature)
    assert seen == {"L", "LW", "nL", "#", "step", "range", "list", "name", "or-rule"}
