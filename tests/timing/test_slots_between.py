"""Counting missed slots: an interval counts them directly, and agrees with walking them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from schedules.timing import Cron, Interval
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


def test_other_triggers_walk_up_to_the_cap() -> None:
    every_minute = Cron("* * * * *")
    count, latest = every_minute.slots_between(START, START + timedelta(days=1), keep=2, cap=100)
    assert count == 100
    assert latest == [START + timedelta(minutes=98), START + timedelta(minutes=99)]
