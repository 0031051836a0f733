"""Interval, Date and Compound triggers, specs and descriptions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from schedules.timing import Compound, Cron, Date, Interval, trigger_from_spec

START = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)


def test_interval_slots_are_anchored_not_relative_to_now() -> None:
    trigger = Interval(every=timedelta(minutes=10), anchor=datetime(2026, 1, 1, 0, 3, tzinfo=UTC))
    assert trigger.preview(3, START) == [
        datetime(2026, 1, 1, 0, 3, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 13, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 23, tzinfo=UTC),
    ]
    # A year later the slots are still on :03, :13, ... to the microsecond.
    later = trigger.next_fire(datetime(2027, 1, 1, tzinfo=UTC))
    assert later == datetime(2027, 1, 1, 0, 3, tzinfo=UTC)


def test_interval_default_anchor_is_the_epoch() -> None:
    assert Interval(3600).next_fire(START) == datetime(2026, 1, 1, 1, tzinfo=UTC)


def test_interval_does_not_fire_before_its_anchor() -> None:
    anchor = datetime(2030, 1, 1, tzinfo=UTC)
    assert Interval(60, anchor=anchor).next_fire(START) == anchor


def test_jitter_is_fresh_per_slot_and_stable_per_seed() -> None:
    a = Interval(3600, jitter=600, seed="reports.daily")
    offsets = [t - t.replace(minute=0, second=0, microsecond=0) for t in a.preview(50, START)]
    assert len(set(offsets)) > 40
    assert all(timedelta(0) <= o <= timedelta(minutes=10) for o in offsets)
    assert Interval(3600, jitter=600, seed="reports.daily").preview(50, START) == a.preview(
        50, START
    )
    assert Interval(3600, jitter=600, seed="other").preview(50, START) != a.preview(50, START)


def test_date_fires_once() -> None:
    at = datetime(2026, 12, 24, 18, tzinfo=ZoneInfo("Europe/Berlin"))
    trigger = Date(at)
    assert trigger.preview(5, START) == [at]
    assert trigger.next_fire(at) is None


def test_compound_any_merges_and_dedupes() -> None:
    trigger = Compound("any", (Cron("0 * * * *"), Interval(1800)))
    times = [t.astimezone(UTC).strftime("%H:%M") for t in trigger.preview(4, START)]
    assert times == ["00:30", "01:00", "01:30", "02:00"]


def test_compound_all_is_the_intersection() -> None:
    # Mondays at 09:00 that are also the 13th.
    trigger = Compound("all", (Cron("0 9 * * MON"), Cron("0 9 13 * *")))
    assert [t.date().isoformat() for t in trigger.preview(2, START)] == [
        "2026-04-13",
        "2026-07-13",
    ]


def test_nested_compounds() -> None:
    weekday_mornings = Compound("all", (Cron("*/30 * * * 1-5"), Cron("* 9-10 * * *")))
    trigger = Compound("any", (weekday_mornings, Date(datetime(2026, 1, 3, 12, tzinfo=UTC))))
    times = [t.strftime("%a %H:%M") for t in trigger.preview(6, START)]
    assert times == [
        "Thu 09:00",
        "Thu 09:30",
        "Thu 10:00",
        "Thu 10:30",
        "Fri 09:00",
        "Fri 09:30",
    ]
    again = trigger_from_spec(trigger.to_spec())
    assert again == trigger


def test_specs_are_plain_json() -> None:
    spec = Compound(
        "any",
        (
            Interval(90, jitter=5, anchor=datetime(2026, 1, 1, tzinfo=UTC), seed="s"),
            Cron("0 9 * * 1-5", "Europe/Berlin"),
            Date(datetime(2026, 12, 24, 18, tzinfo=ZoneInfo("Europe/Berlin"))),
        ),
    ).to_spec()
    assert spec == {
        "kind": "compound",
        "mode": "any",
        "children": [
            {
                "kind": "interval",
                "every": 90.0,
                "jitter": 5.0,
                "anchor": "2026-01-01T00:00:00+00:00",
                "seed": "s",
            },
            {"kind": "cron", "expression": "0 9 * * 1-5", "tz": "Europe/Berlin"},
            {"kind": "date", "at": "2026-12-24T18:00:00+01:00", "tz": "Europe/Berlin"},
        ],
    }


def test_date_spec_with_local_time_and_zone() -> None:
    trigger = trigger_from_spec({"kind": "date", "at": "2026-07-01T08:00", "tz": "Europe/Berlin"})
    assert trigger.at.isoformat() == "2026-07-01T08:00:00+02:00"


def test_descriptions() -> None:
    assert Cron("0 9 * * 1-5", "Europe/Berlin").describe() == (
        "At 09:00, Monday through Friday, Europe/Berlin"
    )
    assert Cron("0 0 LW * *").describe() == "At 00:00, on the last weekday of the month, UTC"
    assert Cron("0 18 * * 5L").describe() == "At 18:00, on the last Friday of the month, UTC"
    assert Cron("0 10 * * 1#3").describe() == "At 10:00, on the third Monday of the month, UTC"
    assert "nearest day 15" in Cron("0 0 15W * *").describe()
    assert Cron("@daily").describe() == "At 00:00, UTC"
    # A list holding special days: every item worded (cron-descriptor kept only the first).
    assert Cron("0 0 1W,15W,L 2 *").describe() == (
        "At 00:00, only in February, on the first weekday, the weekday nearest day 15 and the "
        "last day of the month, UTC"
    )
    assert Cron("0 0 * * SUN#5,SAT#5").describe() == (
        "At 00:00, on the fifth Sunday and the fifth Saturday of the month, UTC"
    )
    assert Cron("0 6 * * MON,5#2").describe() == (
        "At 06:00, on every Monday and the second Friday of the month, UTC"
    )
    # Both day fields restricted: either fires (cron's OR), as the engine computes.
    assert Cron("0 0 L,15 * MON").describe() == (
        "At 00:00, only on Monday, or on the last day and day 15 of the month, UTC"
    )
    assert Interval(5400).describe() == "Every 1 hour 30 minutes"
    assert Interval(60, jitter=10).describe() == "Every 1 minute, up to 10 seconds later at random"
    assert Date(datetime(2026, 12, 24, 18, tzinfo=ZoneInfo("Europe/Berlin"))).describe() == (
        "Once, at 2026-12-24 18:00, Europe/Berlin"
    )
    assert Compound("any", (Interval(60), Cron("@hourly"))).describe() == (
        "Any of: (Every 1 minute); (Every hour, UTC)"
    )
