"""Daylight saving, as Debian cron and cronsim handle it."""

from __future__ import annotations

from datetime import UTC, datetime

from schedules.timing import Cron


def fires(expression: str, tz: str, after: str, n: int) -> list[str]:
    start = datetime.fromisoformat(after)
    return [t.isoformat() for t in Cron(expression, tz).preview(n, start)]


# Europe/Berlin: 2026-03-29 02:00 -> 03:00, 2026-10-25 03:00 -> 02:00.
# America/New_York: 2026-03-08 02:00 -> 03:00, 2026-11-01 02:00 -> 01:00.
# Australia/Lord_Howe: 2026-04-05 02:00 -> 01:30, 2026-10-04 02:00 -> 02:30.


def test_fixed_time_in_a_skipped_hour_fires_at_the_transition() -> None:
    assert fires("30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00+01:00", 3) == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def test_two_fixed_times_in_one_gap_fire_once_at_the_transition() -> None:
    assert fires("0,30 2 * * *", "America/New_York", "2026-03-08T00:00:00-05:00", 3) == [
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]


def test_fixed_time_in_a_repeated_hour_fires_once() -> None:
    assert fires("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00+02:00", 2) == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]


def test_wildcard_hour_in_a_repeated_hour_fires_at_every_instant() -> None:
    assert fires("30 * * * *", "America/New_York", "2026-11-01T00:00:00-04:00", 4) == [
        "2026-11-01T00:30:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:30:00-05:00",
        "2026-11-01T02:30:00-05:00",
    ]


def test_wildcard_minute_skips_the_missing_hour() -> None:
    assert fires("*/30 * * * *", "Europe/Berlin", "2026-03-29T01:00:00+01:00", 3) == [
        "2026-03-29T01:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T03:30:00+02:00",
    ]


def test_lord_howe_half_hour_gap() -> None:
    # 02:00-02:29 do not exist on 2026-10-04.
    assert fires("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30", 2) == [
        "2026-10-04T02:30:00+11:00",
        "2026-10-05T02:15:00+11:00",
    ]
    assert fires("*/15 2 * * *", "Australia/Lord_Howe", "2026-10-04T00:00:00+10:30", 2) == [
        "2026-10-04T02:30:00+11:00",
        "2026-10-04T02:45:00+11:00",
    ]


def test_lord_howe_half_hour_repeat() -> None:
    # 01:30-01:59 happen twice on 2026-04-05.
    assert fires("*/20 1 * * *", "Australia/Lord_Howe", "2026-04-05T00:00:00+11:00", 5) == [
        "2026-04-05T01:00:00+11:00",
        "2026-04-05T01:20:00+11:00",
        "2026-04-05T01:40:00+11:00",
        "2026-04-05T01:40:00+10:30",
        "2026-04-06T01:00:00+10:30",
    ]
    assert fires("40 1 * * *", "Australia/Lord_Howe", "2026-04-05T00:00:00+11:00", 2) == [
        "2026-04-05T01:40:00+11:00",
        "2026-04-06T01:40:00+10:30",
    ]


def test_a_start_inside_the_repeated_hour_is_respected() -> None:
    # After the second 01:10, the next "*/20 1" instant is the second 01:20.
    second_110 = datetime(2026, 11, 1, 6, 10, tzinfo=UTC)  # 01:10 EST
    times = Cron("*/20 1 * * *", "America/New_York").preview(2, second_110)
    assert [t.isoformat() for t in times] == [
        "2026-11-01T01:20:00-05:00",
        "2026-11-01T01:40:00-05:00",
    ]
    # A fixed-time job has already run at its first 01:20.
    fixed = Cron("20 1 * * *", "America/New_York").next_fire(second_110)
    assert fixed.isoformat() == "2026-11-02T01:20:00-05:00"


def test_fire_times_strictly_increase_across_transitions() -> None:
    for tz in ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe"):
        for expression in ("*/7 * * * *", "0 * * * *", "30 1,2,3 * * *", "* 2 * * *"):
            times = Cron(expression, tz).preview(1000, datetime(2026, 3, 1, tzinfo=UTC))
            instants = [t.astimezone(UTC) for t in times]
            assert instants == sorted(set(instants)), (tz, expression)
