"""Each piece of cron syntax in docs/timing.md, checked on known calendars."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from schedules.timing import Cron

START = datetime(2026, 1, 1, tzinfo=UTC)  # a Thursday


def fires(expression: str, n: int = 5, after: datetime = START, tz: str = "UTC") -> list[str]:
    return [t.strftime("%Y-%m-%d %H:%M %a") for t in Cron(expression, tz).preview(n, after)]


def test_every_minute() -> None:
    assert fires("* * * * *", 3) == [
        "2026-01-01 00:01 Thu",
        "2026-01-01 00:02 Thu",
        "2026-01-01 00:03 Thu",
    ]


def test_single_values() -> None:
    assert fires("30 14 * * *", 2) == ["2026-01-01 14:30 Thu", "2026-01-02 14:30 Fri"]


def test_range_and_list() -> None:
    assert fires("0 9-10 * * *", 3) == [
        "2026-01-01 09:00 Thu",
        "2026-01-01 10:00 Thu",
        "2026-01-02 09:00 Fri",
    ]
    assert fires("5,35 8 * * *", 2) == ["2026-01-01 08:05 Thu", "2026-01-01 08:35 Thu"]


def test_steps() -> None:
    assert fires("*/20 0 * * *", 3) == [
        "2026-01-01 00:20 Thu",
        "2026-01-01 00:40 Thu",
        "2026-01-02 00:00 Fri",
    ]
    assert fires("10-30/10 0 * * *", 3) == [
        "2026-01-01 00:10 Thu",
        "2026-01-01 00:20 Thu",
        "2026-01-01 00:30 Thu",
    ]
    # N/S runs from N to the end of the field's range.
    assert fires("0 20/2 * * *", 3) == [
        "2026-01-01 20:00 Thu",
        "2026-01-01 22:00 Thu",
        "2026-01-02 20:00 Fri",
    ]


def test_a_one_value_range_with_a_step_is_that_value() -> None:
    # Vixie cron reads 5-5/10 as 5 (cronsim reads it as 5/10; see docs/timing.md).
    assert fires("5-5/10 0 * * *", 2) == ["2026-01-01 00:05 Thu", "2026-01-02 00:05 Fri"]


def test_month_and_day_names() -> None:
    assert fires("0 0 1 MAR *", 1) == ["2026-03-01 00:00 Sun"]
    assert fires("0 9 * * MON-FRI", 3) == [
        "2026-01-01 09:00 Thu",
        "2026-01-02 09:00 Fri",
        "2026-01-05 09:00 Mon",
    ]
    assert fires("0 9 * jan-feb sat", 1) == ["2026-01-03 09:00 Sat"]


@pytest.mark.parametrize("sunday", ["0", "7", "SUN"])
def test_sunday_is_0_or_7(sunday: str) -> None:
    assert fires(f"0 12 * * {sunday}", 2) == ["2026-01-04 12:00 Sun", "2026-01-11 12:00 Sun"]


def test_range_ending_at_7_includes_sunday() -> None:
    assert fires("0 12 * * 5-7", 4) == [
        "2026-01-02 12:00 Fri",
        "2026-01-03 12:00 Sat",
        "2026-01-04 12:00 Sun",
        "2026-01-09 12:00 Fri",
    ]


def test_last_day_of_month() -> None:
    assert fires("0 0 L * *", 3) == [
        "2026-01-31 00:00 Sat",
        "2026-02-28 00:00 Sat",
        "2026-03-31 00:00 Tue",
    ]
    leap = datetime(2028, 2, 1, tzinfo=UTC)
    assert fires("0 0 L 2 *", 1, after=leap) == ["2028-02-29 00:00 Tue"]


def test_last_weekday_of_month() -> None:
    # Jan 31 2026 is a Saturday, Feb 28 a Saturday, May 31 a Sunday.
    assert fires("0 0 LW * *", 5) == [
        "2026-01-30 00:00 Fri",
        "2026-02-27 00:00 Fri",
        "2026-03-31 00:00 Tue",
        "2026-04-30 00:00 Thu",
        "2026-05-29 00:00 Fri",
    ]


def test_nearest_weekday() -> None:
    # Feb 15 2026 is a Sunday -> Monday 16; Mar 15 a Sunday -> 16; Aug 15 a Saturday -> 14.
    assert fires("0 0 15W 2,3,8 *", 3) == [
        "2026-02-16 00:00 Mon",
        "2026-03-16 00:00 Mon",
        "2026-08-14 00:00 Fri",
    ]


def test_nearest_weekday_stays_in_the_month() -> None:
    # Aug 1 2026 is a Saturday: 1W is Monday the 3rd, not Friday July 31.
    assert fires("0 0 1W 8 *", 1) == ["2026-08-03 00:00 Mon"]
    # May 31 2026 is a Sunday: 31W is Friday the 29th, not Monday June 1.
    assert fires("0 0 31W 5 *", 1) == ["2026-05-29 00:00 Fri"]
    # A month without day 31 has no 31W.
    assert fires("0 0 31W 4,5 *", 1) == ["2026-05-29 00:00 Fri"]


def test_last_given_weekday() -> None:
    assert fires("0 18 * * 5L", 3) == [
        "2026-01-30 18:00 Fri",
        "2026-02-27 18:00 Fri",
        "2026-03-27 18:00 Fri",
    ]


def test_nth_weekday() -> None:
    assert fires("0 10 * * 1#3", 3) == [
        "2026-01-19 10:00 Mon",
        "2026-02-16 10:00 Mon",
        "2026-03-16 10:00 Mon",
    ]
    # A fifth Friday exists only in some months.
    assert fires("0 10 * * FRI#5", 2) == ["2026-01-30 10:00 Fri", "2026-05-29 10:00 Fri"]


def test_question_mark_is_a_star_in_day_fields() -> None:
    assert fires("0 8 ? * MON", 2) == fires("0 8 * * MON", 2)
    assert fires("0 8 1 * ?", 2) == fires("0 8 1 * *", 2)


@pytest.mark.parametrize(
    ("macro", "expression"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ],
)
def test_macros(macro: str, expression: str) -> None:
    assert fires(macro, 3) == fires(expression, 3)


def test_vixie_rule_ors_two_restricted_day_fields() -> None:
    # Day 13 OR Friday.
    assert fires("0 0 13 * FRI", 4) == [
        "2026-01-02 00:00 Fri",
        "2026-01-09 00:00 Fri",
        "2026-01-13 00:00 Tue",
        "2026-01-16 00:00 Fri",
    ]


def test_vixie_rule_ands_when_a_day_field_starts_with_star() -> None:
    # Odd days that are also Fridays.
    assert fires("0 0 */2 * FRI", 3) == [
        "2026-01-09 00:00 Fri",
        "2026-01-23 00:00 Fri",
        "2026-02-13 00:00 Fri",
    ]


def test_whitespace_and_case_are_forgiven() -> None:
    assert fires("  0   9 * *   mon ", 1) == fires("0 9 * * MON", 1)


def test_far_apart_fire_times_are_found() -> None:
    # The next Feb 29; the next Feb 1 that is a Monday.
    assert fires("0 0 29 2 *", 1) == ["2028-02-29 00:00 Tue"]
    assert fires("0 0 */29 2 MON", 1) == ["2027-02-01 00:00 Mon"]


def test_no_fire_times_past_year_9999() -> None:
    assert Cron("0 0 1 1 *").next_fire(datetime(9999, 6, 1, tzinfo=UTC)) is None


def test_fire_times_are_in_the_schedule_zone() -> None:
    first = Cron("0 9 * * *", "Europe/Berlin").next_fire(START)
    assert first.isoformat() == "2026-01-01T09:00:00+01:00"
    assert first.tzinfo.key == "Europe/Berlin"
