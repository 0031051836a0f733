"""Every class of bad input raises InvalidTrigger with a message that names it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schedules.timing import (
    Compound,
    Cron,
    Date,
    Interval,
    InvalidTrigger,
    instant_from_text,
    trigger_from_spec,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "cron expression is empty"),
        ("* * * *", "needs 5 fields"),
        ("* * * * * *", "got 6"),
        ("60 * * * *", "minute 60 is out of range 0-59"),
        ("* 24 * * *", "hour 24 is out of range 0-23"),
        ("* * 0 * *", "day-of-month 0 is out of range 1-31"),
        ("* * 32 * *", "day-of-month 32 is out of range 1-31"),
        ("* * * 13 *", "month 13 is out of range 1-12"),
        ("* * * * 8", "day-of-week 8 is out of range 0-7"),
        ("x * * * *", "minute 'x' is not a number"),
        ("* * * FOO *", "month 'FOO' is not a number or name"),
        ("* * * * FUNDAY", "day-of-week 'FUNDAY' is not a number or name"),
        ("30-10 * * * *", "minute range 30-10 is backwards"),
        ("*/0 * * * *", "minute step 0 must be at least 1"),
        ("*/x * * * *", "minute step 'x' is not a number"),
        ("1,,2 * * * *", "minute '1,,2' has an empty list item"),
        ("? * * * *", "minute '?' is not a number"),
        ("* * LX * *", "day-of-month 'LX' is not valid"),
        ("* * 1-5W * *", "W needs a single day"),
        ("* * 32W * *", "day-of-month 32 is out of range 1-31"),
        ("* * * * L", "day-of-week 'L' needs a day before it"),
        ("* * * * 9L", "day-of-week 9 is out of range 0-7"),
        ("* * * * 1#6", "the number after # must be 1-5"),
        ("* * * * 1#0", "the number after # must be 1-5"),
        ("@fortnightly", "unknown cron macro '@fortnightly'"),
        ("0 0 30 2 *", "'0 0 30 2 *' never fires"),
        ("0 0 31 4,6,9,11 *", "never fires"),
        ("0 0 L-2 * *", "day-of-month 'L-2' is not valid"),
    ],
)
def test_bad_cron_expressions(expression: str, message: str) -> None:
    with pytest.raises(InvalidTrigger, match=None) as info:
        Cron(expression)
    assert message in str(info.value)


def test_unknown_time_zone() -> None:
    with pytest.raises(InvalidTrigger, match="unknown time zone 'Europe/Berln'"):
        Cron("* * * * *", "Europe/Berln")
    with pytest.raises(InvalidTrigger, match="unknown time zone"):
        Cron("* * * * *", "../../etc/passwd")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"every": 0}, "every must be positive"),
        ({"every": -5}, "every must be positive"),
        ({"every": 0.5}, "at least 1 second"),
        ({"every": "hourly"}, "every must be a number of seconds"),
        ({"every": float("nan")}, "every must be a number of seconds"),
        ({"every": 60, "jitter": -1}, "jitter must not be negative"),
        ({"every": 60, "jitter": 60}, "jitter must be less than every"),
        ({"every": 60, "anchor": datetime(2026, 1, 1)}, "anchor must be timezone-aware"),
        ({"every": 1e20}, "too large"),
    ],
)
def test_bad_intervals(kwargs: dict, message: str) -> None:
    with pytest.raises(InvalidTrigger) as info:
        Interval(**kwargs)
    assert message in str(info.value)


def test_naive_datetimes_are_refused_everywhere() -> None:
    naive = datetime(2026, 1, 1)
    with pytest.raises(InvalidTrigger, match="after must be timezone-aware"):
        Cron("* * * * *").next_fire(naive)
    with pytest.raises(InvalidTrigger, match="after must be timezone-aware"):
        Interval(60).next_fire(naive)
    with pytest.raises(InvalidTrigger, match="'at' must be timezone-aware"):
        Date(naive)
    with pytest.raises(InvalidTrigger, match="after must be a datetime"):
        Cron("* * * * *").next_fire("2026-01-01")


def test_bad_preview_counts() -> None:
    for n in (0, -1, 1001, 2.5, True):
        with pytest.raises(InvalidTrigger, match="preview count"):
            Cron("* * * * *").preview(n, NOW)


def test_compound_errors() -> None:
    with pytest.raises(InvalidTrigger, match="mode must be 'any' or 'all'"):
        Compound("some", (Interval(60),))
    with pytest.raises(InvalidTrigger, match="at least one child"):
        Compound("any", ())
    with pytest.raises(InvalidTrigger, match="children must be triggers"):
        Compound("any", ("* * * * *",))
    with pytest.raises(InvalidTrigger, match="compound 'all' cannot be decided within the"):
        Compound("all", (Cron("0 9 * * MON"), Cron("0 9 * * TUE")))
    with pytest.raises(InvalidTrigger, match="compound 'all' never fires"):
        Compound("all", (Cron("0 9 * * MON"), Date(datetime(1969, 1, 1, tzinfo=UTC))))
    deep = Interval(60)
    with pytest.raises(InvalidTrigger, match="nest deeper than 8"):
        for _ in range(10):
            deep = Compound("any", (deep,))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{not json", "trigger spec is not valid JSON"),
        ("[]", "a trigger spec must be a JSON object"),
        ({}, "unknown kind None"),
        ({"kind": "weekly"}, "unknown kind 'weekly'"),
        ({"kind": "cron"}, "cron spec needs 'expression'"),
        ({"kind": "cron", "expression": "* * * *"}, "trigger: cron expression needs 5 fields"),
        ({"kind": "cron", "expression": 5}, "cron expression must be a string"),
        ({"kind": "cron", "expression": "* * * * *", "zone": "UTC"}, "unknown cron field(s): zone"),
        ({"kind": "interval"}, "interval spec needs 'every'"),
        ({"kind": "interval", "every": 60, "anchor": "yesterday"}, "is not an ISO-8601"),
        ({"kind": "interval", "every": 60, "anchor": "2026-01-01T00:00"}, "needs a UTC offset"),
        ({"kind": "date"}, "date spec needs 'at'"),
        ({"kind": "date", "at": "2026-13-01T00:00+00:00"}, "is not an ISO-8601"),
        ({"kind": "date", "at": "2026-03-29T02:30", "tz": "Europe/Berlin"}, "does not exist in"),
        ({"kind": "date", "at": "2026-03-29T12:30", "tz": "Mars/Base"}, "unknown time zone"),
        ({"kind": "compound", "mode": "any"}, "compound spec needs 'children'"),
        (
            {"kind": "compound", "mode": "any", "children": [{"kind": "interval", "every": -1}]},
            "trigger.children[0]: interval every must be positive",
        ),
    ],
)
def test_bad_specs(spec: object, message: str) -> None:
    with pytest.raises(InvalidTrigger) as info:
        trigger_from_spec(spec)
    assert message in str(info.value)


def test_operator_times() -> None:
    assert instant_from_text("2026-03-01T09:00", "Europe/Berlin").isoformat() == (
        "2026-03-01T09:00:00+01:00"
    )
    assert instant_from_text("2026-03-01T09:00+00:00").utcoffset() == timedelta(0)
    with pytest.raises(InvalidTrigger, match="needs a UTC offset"):
        instant_from_text("2026-03-01T09:00")
