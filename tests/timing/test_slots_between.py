"""Counting missed slots: intervals and crons count them directly, and agree with walking them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedules.timing import Cron, Interval, trigger_from_spec
from schedules.timing.base import Trigger

START = datetime(2026, 3, 1, tzinfo=UTC)


def walked(trigger: Interval, first: datetime, until: datetime, keep: int):
    return Trigger.slots_between(trigger, first, until, keep=keep, cap=10**9)


@settings(max_examples=300, deadline=None)
@given(
    every=st.integers(min_value=1, max_value=7200),
    jitter_share=st.floats(min_value=0, max_value=0.99),
    offset=st.integers(min_value=-3600, max_value=86_400),
    span=st.integers(min_value=0, max_value=86_400),
    keep=st.integers(min_value=1, max_value=20),
)
def test_an_interval_counts_what_walking_finds(every, jitter_share, offset, span, keep) -> None:
    trigger = Interval(every, jitter=int(every * jitter_share), anchor=START, seed="s")
    first = START + timedelta(seconds=offset)
    until = first + timedelta(seconds=span)
    assert trigger.slots_between(first, until, keep=keep) == walked(trigger, first, until, keep)


def test_a_day_of_one_second_slots_is_counted_not_walked() -> None:
    trigger = Interval(1, anchor=START)
    count, latest = trigger.slots_between(START, START + timedelta(days=1), keep=3)
    assert count == 86_401
    assert latest == [START + timedelta(seconds=s) for s in (86_398, 86_399, 86_400)]


# Zones with a DST gap and overlap at different hours (Lord Howe moves by 30 minutes,
# Santiago at midnight), and expressions whose fixed times fall in them.
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago"]
EXPRESSIONS = [
    "* * * * *", "*/7 * * * *", "30 2 * * *", "0 0 * * *", "15,45 1-3 * * *",
    "0 */5 * * 1-5", "59 23 L * *", "0 12 15W * *", "30 1 * * 0#2", "* 2 * * *",
]  # fmt: skip


@settings(max_examples=250, deadline=None)
@given(
    expression=st.sampled_from(EXPRESSIONS),
    tz=st.sampled_from(ZONES),
    # Around the 2026 transitions of every zone above (March/April, September/October).
    start=st.datetimes(min_value=datetime(2026, 3, 1), max_value=datetime(2026, 4, 8))
    | st.datetimes(min_value=datetime(2026, 9, 1), max_value=datetime(2026, 10, 30)),
    span=st.integers(min_value=0, max_value=9 * 86_400),
    keep=st.integers(min_value=1, max_value=120),
)
def test_a_cron_counts_what_walking_finds(expression, tz, start, span, keep) -> None:
    trigger = Cron(expression, tz=tz)
    first = start.replace(tzinfo=UTC)
    until = first + timedelta(seconds=span)
    assert trigger.slots_between(first, until, keep=keep, cap=10**9) == walked(
        trigger, first, until, keep
    )


def test_a_month_of_minutely_cron_slots_is_counted_not_walked(monkeypatch) -> None:
    every_minute = Cron("* * * * *", tz="Europe/Berlin")
    until = START + timedelta(days=30)
    expected = walked(every_minute, START, until, 2)
    steps = []
    walk = Cron.iter_fires

    def counting(self, after):
        for slot in walk(self, after):
            steps.append(slot)
            yield slot

    monkeypatch.setattr(Cron, "iter_fires", counting)
    assert every_minute.slots_between(START, until, keep=2, cap=10**9) == expected
    # The latest two and the days around 29 March's transition: not 43,201 slots.
    assert len(steps) < 6_000


@pytest.mark.parametrize(
    "trigger",
    [
        Cron("* * * * *"),
        trigger_from_spec(
            {
                "kind": "compound",
                "mode": "any",
                "children": [
                    {"kind": "cron", "expression": "* * * * *"},
                    {"kind": "interval", "every": 7200},
                ],
            }
        ),
    ],  # fmt: skip
    ids=["cron", "compound"],
)
def test_the_cap_bounds_the_count_not_which_slots_are_latest(trigger) -> None:
    until = START + timedelta(days=1)
    count, latest = trigger.slots_between(START, until, keep=2, cap=100)
    assert count == 100
    assert latest == [until - timedelta(minutes=1), until]


def test_a_cron_near_the_last_year_is_walked_not_counted() -> None:
    trigger = Cron("0 */6 * * *")
    first = datetime(9999, 12, 29, 1, tzinfo=UTC)
    until = datetime(9999, 12, 31, 23, 59, tzinfo=UTC)
    assert trigger.slots_between(first, until, keep=3) == walked(trigger, first, until, 3)
