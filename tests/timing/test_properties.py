"""Property tests (hypothesis) for every trigger kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from cronsim import CronSim
from hypothesis import example, given, settings
from hypothesis import strategies as st

from schedules.timing import (
    Compound,
    Cron,
    Date,
    Interval,
    InvalidTrigger,
    Trigger,
    trigger_from_spec,
)

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]

instants = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2060, 1, 1), timezones=st.just(UTC)
)


def _field(lo: int, hi: int) -> st.SearchStrategy[str]:
    value = st.integers(lo, hi)
    return st.one_of(
        st.just("*"),
        value.map(str),
        st.integers(1, hi - lo).map(lambda s: f"*/{s}"),
        st.tuples(value, value).map(lambda ab: f"{min(ab)}-{max(ab)}"),
        st.lists(value, min_size=2, max_size=4, unique=True).map(lambda v: ",".join(map(str, v))),
    )


cron_expressions = st.tuples(
    _field(0, 59),
    _field(0, 23),
    st.one_of(_field(1, 31), st.sampled_from(["L", "LW", "15W", "1W", "?"])),
    _field(1, 12),
    st.one_of(_field(0, 7), st.sampled_from(["5L", "1#3", "MON-FRI", "SUN#5", "?"])),
).map(" ".join)


def valid_cron(expression: str, tz: str) -> Cron | None:
    try:
        return Cron(expression, tz)
    except InvalidTrigger:
        return None


@settings(max_examples=300, deadline=None)
@given(cron_expressions, st.sampled_from(ZONES), instants)
def test_cron_fire_times_increase_match_and_follow_after(expr: str, tz: str, after: datetime):
    trigger = valid_cron(expr, tz)
    if trigger is None:
        return
    times = trigger.preview(20, after)
    instants_utc = [t.astimezone(UTC) for t in times]
    assert instants_utc == sorted(set(instants_utc))
    assert all(t > after for t in instants_utc)
    if "W" in expr:  # cronsim has no NW to check against; see test_cron_syntax
        return
    sets = CronSim(expr.replace("?", "*"), datetime(2020, 1, 1))
    for t in times:
        assert t.tzinfo == ZoneInfo(tz)
        local = t.replace(tzinfo=None)
        # A fire time is a matching wall-clock time, or the end of a DST gap.
        gap_end = t.utcoffset() != (t - timedelta(minutes=1)).utcoffset() if tz != "UTC" else False
        assert gap_end or (
            local.minute in sets.minutes
            and local.hour in sets.hours
            and local.month in sets.months
            and sets.match_day(local.date())
        )


@settings(max_examples=200, deadline=None)
@given(cron_expressions, st.sampled_from(ZONES), instants)
# A slot at the end of a DST gap: "1 µs before" it must be taken in real time
# (in wall time it would fall into the gap, an hour later in real time).
@example("0 0,2 * 3,4 0", "America/New_York", datetime(2007, 1, 1, tzinfo=UTC))
def test_next_fire_just_before_a_slot_is_that_slot(expr: str, tz: str, after: datetime):
    trigger = valid_cron(expr, tz)
    if trigger is None:
        return
    for slot in trigger.preview(5, after):
        just_before = slot.astimezone(UTC) - timedelta(microseconds=1)
        assert trigger.next_fire(just_before).astimezone(UTC) == slot.astimezone(UTC)
        following = trigger.next_fire(slot)
        assert following is None or following.astimezone(UTC) > slot.astimezone(UTC)


intervals = st.builds(
    lambda every, jitter_share, anchor: Interval(
        every=every, jitter=every * jitter_share // 100, anchor=anchor, seed="p"
    ),
    st.integers(1, 10 * 86400).map(lambda s: timedelta(seconds=s)),
    st.integers(0, 99),
    instants,
)


@settings(max_examples=300, deadline=None)
@given(intervals, instants)
def test_interval_slots_are_anchored_and_jitter_stays_in_bounds(trigger: Interval, after):
    times = trigger.preview(10, after)
    assert all(t > after for t in times)
    assert times == sorted(times)
    for t in times:
        k = (t - trigger.anchor) // trigger.every
        assert k >= 0
        nominal = trigger.anchor + k * trigger.every
        assert timedelta(0) <= t - nominal <= trigger.jitter
    # The same slot every time it is asked for: no drift, no re-rolled jitter.
    assert trigger.preview(10, after) == times
    if times:
        assert trigger.next_fire(times[0] - timedelta(microseconds=1)) == times[0]


simple_triggers = st.one_of(
    intervals,
    st.builds(Date, instants),
    st.builds(
        Cron,
        st.sampled_from(["*/5 * * * *", "0 9 * * 1-5", "0 0 L * *", "30 2 * * 0"]),
        st.sampled_from(ZONES),
    ),
)
any_triggers = st.recursive(
    simple_triggers,
    lambda children: st.lists(children, min_size=1, max_size=3).map(
        lambda kids: Compound("any", tuple(kids))
    ),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(any_triggers)
def test_every_trigger_round_trips_through_its_json_spec(trigger: Trigger):
    import json

    spec = json.loads(json.dumps(trigger.to_spec()))
    again = trigger_from_spec(spec)
    assert again == trigger
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert again.preview(5, start) == trigger.preview(5, start)


@settings(max_examples=150, deadline=None)
@given(st.lists(simple_triggers, min_size=1, max_size=4), instants)
def test_compound_any_is_the_sorted_union_of_its_children(children, after):
    union = set()
    for child in children:
        union.update(t.astimezone(UTC) for t in child.preview(8, after))
    expected = sorted(union)[:8]
    ours = [t.astimezone(UTC) for t in Compound("any", tuple(children)).preview(8, after)]
    assert ours == expected


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["*/10 * * * *", "0 * * * *", "0 9 * * *", "*/15 9-17 * * 1-5"]),
    st.integers(1, 12).map(lambda m: timedelta(minutes=5 * m)),
    instants,
)
def test_compound_all_fires_exactly_where_every_child_fires(expr, every, after):
    cron = Cron(expr)
    interval = Interval(every=every)
    try:
        trigger = Compound("all", (cron, interval))
    except InvalidTrigger:
        # Rejected only if the two really never meet within a day's cycle.
        assert all(
            interval.next_fire(c - timedelta(microseconds=1)) != c
            for c in cron.preview(1000, after)
        )
        return
    times = trigger.preview(5, after)
    assert times
    previous = after
    for t in times:
        assert cron.next_fire(t - timedelta(microseconds=1)) == t
        assert interval.next_fire(t - timedelta(microseconds=1)) == t
        # Nothing in between fires for both.
        c = cron.next_fire(previous)
        while c.astimezone(UTC) < t.astimezone(UTC):
            assert interval.next_fire(c - timedelta(microseconds=1)) != c
            c = cron.next_fire(c)
        previous = t
