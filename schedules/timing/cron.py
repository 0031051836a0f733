"""The Cron trigger: jumps field by field, then applies Debian cron's DST rules.

Candidates are produced as local wall-clock times by walking months, then
matching days, then hours, then minutes from sorted tables, so the cost of a
fire time does not depend on how far away it is. Days without a UTC offset
change map straight to instants. On a day with a transition:

* a fixed-time job (minute and hour fields not starting with ``*``) runs once
  per wall-clock time: in a skipped hour it runs at the end of the gap, in a
  repeated hour only at the first occurrence;
* any other job runs at every real instant whose wall-clock time matches.

These are the rules of Debian cron and cronsim, which the tests compare against.
"""

from __future__ import annotations

import calendar
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from .base import ONE_MICROSECOND, Trigger
from .cronexpr import CronFields, parse_cron
from .describe import describe_cron
from .errors import InvalidTrigger
from .zones import get_zone, is_imaginary, require_aware, to_utc

ONE_MINUTE = timedelta(minutes=1)
ONE_DAY = timedelta(days=1)
MAX_YEAR = 9999


def _naive_days(fields: CronFields, start: datetime) -> Iterator[tuple[int, int, int]]:
    """(year, month, day) of matching days from start's date on, jumping by month."""
    months = fields.months
    year, index = start.year, bisect_left(months, start.month)
    while year <= MAX_YEAR:
        for month in months[index:]:
            first_day = start.day if (year, month) == (start.year, start.month) else 1
            first_weekday, length = calendar.monthrange(year, month)
            days = fields.days(length, (first_weekday + 1) % 7)
            for day in days[bisect_left(days, first_day) :]:
                yield year, month, day
        year, index = year + 1, 0


def _times(fields: CronFields, after_hour: int, after_minute: int) -> Iterator[tuple[int, int]]:
    """(hour, minute) pairs of a day strictly after after_hour:after_minute."""
    minutes = fields.minutes
    hours = fields.hours
    start = bisect_left(hours, after_hour)
    for hour in hours[start:]:
        if hour == after_hour:
            for minute in minutes[bisect_right(minutes, after_minute) :]:
                yield hour, minute
        else:
            for minute in minutes:
                yield hour, minute


@dataclass(frozen=True)
class Cron(Trigger):
    """Fires when the wall-clock time in `tz` matches a five-field expression."""

    expression: str
    tz: str = "UTC"
    fields: CronFields = field(init=False, repr=False, compare=False)
    zone: ZoneInfo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", parse_cron(self.expression))
        object.__setattr__(self, "zone", get_zone(self.tz))

    def to_spec(self) -> dict:
        return {"kind": "cron", "expression": self.expression, "tz": self.tz}

    def describe(self) -> str:
        return describe_cron(self.fields.expression, self.tz)

    def slots_between(
        self, first: datetime, until: datetime, *, keep: int, cap: int = 10_000
    ) -> tuple[int, list[datetime]]:
        """Counted a day at a time, not walked: after a day down, `* * * * *` costs a
        scheduler's catch-up a few steps instead of 1,440 slots.

        The last `keep` slots are walked from a window before `until` sized by
        counting (`latest_slots`), so they are the latest ones whatever the cap
        (which bounds the count only).
        """
        first_utc = to_utc(require_aware(first, "first"))
        until_utc = to_utc(require_aware(until, "until"))
        if until_utc < first_utc:
            return 0, []
        try:
            count = self._count(first_utc, until_utc, cap)
        except OverflowError:  # a day next to year 1 or 9999: walked instead
            return super().slots_between(first, until, keep=keep, cap=cap)
        if count == 0 or keep <= 0:
            return min(count, cap), []
        if count < cap and count <= keep:  # all of them, the first `count` from `first`
            return count, list(islice(self.iter_fires(first_utc - ONE_MICROSECOND), count))
        return min(count, cap), self.latest_slots(first, until, keep)

    def _count(self, first_utc: datetime, until_utc: datetime, cap: int) -> int:
        """Slots in [first, until]. A day with no offset change, after a day with none
        (so no slot a DST gap moved past midnight lands in it) and between two real
        midnights, holds each time of the table once: counted from the tables. The
        rest is walked. Stops once `cap` is reached (a decade down is as cheap as a week)."""
        zone, fields = self.zone, self.fields
        start = first_utc.astimezone(zone).replace(tzinfo=None, fold=0)
        last_day = until_utc.astimezone(zone).date()
        plain = _PlainDays(zone)
        end = until_utc + ONE_MICROSECOND  # until itself counts
        count = 0
        walked_to = first_utc - ONE_MICROSECOND  # slots after this are not counted yet
        for year, month, day in _naive_days(fields, start):
            today = date(year, month, day)
            if today > last_day:
                break
            if not self._countable(today, plain):
                continue  # walked with what surrounds it
            low = max(first_utc, _local_midnight(today, zone))
            high = min(end, _local_midnight(today + ONE_DAY, zone))
            if walked_to < low - ONE_MICROSECOND:
                count += self._walk(walked_to, low)
            count += _times_before(fields, high, zone, today) - _times_before(
                fields, low, zone, today
            )
            walked_to = high - ONE_MICROSECOND
            if count >= cap:
                return count
        return count + self._walk(walked_to, end)

    def _countable(self, today: date, plain: _PlainDays) -> bool:
        yesterday, tomorrow = today - ONE_DAY, today + ONE_DAY
        return (
            plain.is_plain(today.year, today.month, today.day)
            and plain.is_plain(yesterday.year, yesterday.month, yesterday.day)
            and not is_imaginary(datetime(today.year, today.month, today.day, tzinfo=self.zone))
            and not is_imaginary(
                datetime(tomorrow.year, tomorrow.month, tomorrow.day, tzinfo=self.zone)
            )
        )

    def _walk(self, after: datetime, before: datetime) -> int:
        """How many slots fall strictly after `after` and strictly before `before`."""
        count = 0
        for slot in self.iter_fires(after):
            if to_utc(slot) >= before:
                break
            count += 1
        return count

    def _holds(self, low: datetime, until: datetime, keep: int) -> bool:
        return self._count(to_utc(low), to_utc(until), keep) >= keep

    def iter_fires(self, after: datetime) -> Iterator[datetime]:
        require_aware(after, "after")
        zone, fields = self.zone, self.fields
        after_utc = to_utc(after)
        try:
            start = after_utc.astimezone(zone).replace(tzinfo=None, fold=0)
        except OverflowError:
            return
        plain_days = _PlainDays(zone)
        # A fixed-time job never runs twice for one wall-clock time, and after
        # a skipped hour it resumes from the end of the gap, as Debian cron does.
        cursor = start if fields.fixed_time else None

        for year, month, day in _naive_days(fields, start):
            plain = plain_days.is_plain(year, month, day)
            is_start_day = (year, month, day) == (start.year, start.month, start.day)
            if is_start_day and (plain or fields.fixed_time):
                times = _times(fields, start.hour, start.minute)
            else:
                times = _times(fields, -1, -1)

            if plain:
                for hour, minute in times:
                    if cursor is not None:
                        if datetime(year, month, day, hour, minute) <= cursor:
                            continue
                        cursor = None
                    yield datetime(year, month, day, hour, minute, tzinfo=zone)
            elif fields.fixed_time:
                for hour, minute in times:
                    if cursor is not None and datetime(year, month, day, hour, minute) <= cursor:
                        continue
                    resolved = _end_of_gap(datetime(year, month, day, hour, minute, tzinfo=zone))
                    cursor = resolved.replace(tzinfo=None)
                    if to_utc(resolved) > after_utc:
                        yield resolved
            else:
                yield from _real_instants(zone, year, month, day, times, after_utc)


def _local_midnight(day: date, zone: ZoneInfo) -> datetime:
    """The instant a plain day begins (its wall clock maps 1:1), in UTC."""
    return to_utc(datetime(day.year, day.month, day.day, tzinfo=zone))


def _times_before(fields: CronFields, instant: datetime, zone: ZoneInfo, day: date) -> int:
    """How many of a plain `day`'s table times fall before `instant` (an instant of
    that day, or the next midnight)."""
    local = instant.astimezone(zone).replace(tzinfo=None)
    if local.date() > day:
        return len(fields.hours) * len(fields.minutes)
    hours, minutes = fields.hours, fields.minutes
    earlier = bisect_left(hours, local.hour)
    count = earlier * len(minutes)
    if earlier < len(hours) and hours[earlier] == local.hour:
        count += bisect_left(minutes, local.minute)
        if (local.second or local.microsecond) and local.minute in minutes:
            count += 1  # this minute's slot came at its start, before `instant`
    return count


def _real_instants(
    zone: ZoneInfo,
    year: int,
    month: int,
    day: int,
    times: Iterator[tuple[int, int]],
    after_utc: datetime,
) -> list[datetime]:
    """Every real instant of a transition day whose wall-clock time is in `times`."""
    instants = []
    for hour, minute in times:
        first = datetime(year, month, day, hour, minute, tzinfo=zone)
        if is_imaginary(first):
            continue
        instants.append(first)
        second = first.replace(fold=1)
        if second.utcoffset() != first.utcoffset():
            instants.append(second)
    instants.sort(key=to_utc)
    return [instant for instant in instants if to_utc(instant) > after_utc]


def _end_of_gap(local: datetime) -> datetime:
    """`local` itself, or the first real minute after it if a DST jump skipped it."""
    steps = 0
    while is_imaginary(local):
        local = local + ONE_MINUTE  # wall-clock arithmetic within the zone
        steps += 1
        if steps > 24 * 60:  # no zone skips a whole day in one jump
            raise InvalidTrigger(f"cannot resolve skipped local time {local.isoformat()}")
    return local


class _PlainDays:
    """Whether a local day has no UTC offset change, so wall times map 1:1."""

    def __init__(self, zone: ZoneInfo) -> None:
        self.zone = zone
        self.fixed = zone.key == "UTC"

    def is_plain(self, year: int, month: int, day: int) -> bool:
        if self.fixed:
            return True
        midnight = datetime(year, month, day, tzinfo=self.zone)
        try:
            next_midnight = datetime.combine(midnight.date() + ONE_DAY, midnight.timetz())
        except OverflowError:
            return True
        return midnight.utcoffset() == next_midnight.utcoffset()
