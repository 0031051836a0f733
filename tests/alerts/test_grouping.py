"""Summaries: a storm of one event reaches each channel as one notification, not hundreds.

Driven through the real path: schedules a day behind, the alerting step's late
sweep opens an incident (and a notification per channel) on each, and its
deliverer groups what waits and sends it to a local HTTP receiver.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async

from schedules.models import Channel, Incident, Notification
from schedules.notify import grouping, outbox, payload
from schedules.scheduler.alerting import Alerting
from tests.factories import T0, FakeClock, every, make_schedule

from .receiver import Receiver

DAY = 86_400


@pytest.fixture
def hook(transactional_db, receiver) -> Channel:
    return Channel.objects.create(name="ops hook", kind="webhook", url=receiver.url)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0 + timedelta(seconds=DAY))


@sync_to_async
def fall_behind(prefix: str, count: int) -> None:
    """Schedules whose first slot was a day before the clock: the late sweep's to find."""
    for i in range(count):
        make_schedule(f"{prefix}{i}", "test.echo", every(60), misfire_grace=30)


@sync_to_async
def rows(**filters) -> list[Notification]:
    return list(Notification.objects.filter(**filters).order_by("pk"))


async def step(alerting: Alerting, clock: FakeClock, seconds: float = 0) -> None:
    clock.advance(seconds)
    alerting._last_check = None  # sweep on every step, whatever the check interval
    await alerting.step()
    await alerting.wait_idle()


async def test_a_storm_of_late_schedules_reaches_a_channel_as_one_summary(
    hook, receiver, clock
) -> None:
    await fall_behind("late", 25)
    alerting = Alerting(instance_id="a", clock=clock)
    await step(alerting, clock)

    assert await sync_to_async(Incident.objects.filter(kind="late").count)() == 25
    (request,) = receiver.requests
    document = request["json"]
    assert document["event"] == "late" and document["incident"] is None
    assert document["group"]["size"] == 25
    assert len(document["group"]["schedules"]) == grouping.NAMED == 20
    lines = document["text"].splitlines()
    assert len(lines) == 21 and lines[-1] == "and 5 more"
    assert lines[0].startswith(document["group"]["schedules"][0] + ": slot ")
    assert document["url"].endswith("/incidents/")
    assert payload.title_of(document) == "25 schedules are late"

    (summary,) = await rows(size__gt=0)
    assert (summary.status, summary.size, summary.attempts) == ("sent", 25, 1)
    assert summary.channel_label == "ops hook"
    assert request["headers"]["X-Sillo-Delivery"] == str(summary.pk)
    members = await rows(size=0)
    assert len(members) == 25
    assert {(m.status, m.group_id) for m in members} == {("grouped", summary.pk)}
    await alerting.shutdown()


async def test_a_few_at_once_go_each_on_their_own(hook, receiver, clock) -> None:
    await fall_behind("few", 4)  # one below SILLO_NOTIFY_GROUP_AT (5)
    alerting = Alerting(instance_id="a", clock=clock)
    await step(alerting, clock)
    await step(alerting, clock)  # four sends at once at most: the rest next step
    assert sorted(r["json"]["schedule"] for r in receiver.requests) == [f"few{i}" for i in range(4)]
    assert all(r["json"].get("group") is None for r in receiver.requests)
    assert await rows(size__gt=0) == []
    await alerting.shutdown()


async def test_while_a_storm_goes_on_its_event_waits_for_the_next_summary(
    hook, receiver, clock, settings
) -> None:
    settings.SILLO_NOTIFY_GROUP_INTERVAL = 60
    await fall_behind("first", 10)
    alerting = Alerting(instance_id="a", clock=clock)
    await step(alerting, clock)
    assert [r["json"]["group"]["size"] for r in receiver.requests] == [10]

    await fall_behind("second", 7)  # late a day too, found by the next sweep
    await step(alerting, clock, 20)
    await step(alerting, clock, 20)
    assert len(receiver.requests) == 1  # held: within the interval of the last summary

    await step(alerting, clock, 21)  # 61 s after the first summary
    assert [r["json"]["group"]["size"] for r in receiver.requests] == [10, 7]
    assert sorted(receiver.requests[1]["json"]["group"]["schedules"]) == sorted(
        f"second{i}" for i in range(7)
    )
    await alerting.shutdown()


async def test_a_straggler_after_the_interval_goes_on_its_own(hook, receiver, clock) -> None:
    await fall_behind("crowd", 6)
    alerting = Alerting(instance_id="a", clock=clock)
    await step(alerting, clock)
    await fall_behind("straggler", 1)
    await step(alerting, clock, 30)
    assert len(receiver.requests) == 1
    await step(alerting, clock, 31)
    assert [r["json"]["schedule"] for r in receiver.requests[1:]] == ["straggler0"]
    await alerting.shutdown()


async def test_other_events_are_not_held_back_by_a_summary(hook, receiver, clock) -> None:
    await fall_behind("late", 6)
    alerting = Alerting(instance_id="a", clock=clock)
    await step(alerting, clock)
    await sync_to_async(write)("failed", "nightly", clock.now())
    await step(alerting, clock, 1)
    assert [r["json"]["event"] for r in receiver.requests] == ["late", "failed"]
    assert receiver.requests[1]["json"]["schedule"] == "nightly"
    await alerting.shutdown()


async def test_each_channel_gets_its_own_summary(hook, receiver, clock, settings) -> None:
    other = Receiver()
    try:
        settings.SILLO_NOTIFY = [f"{other.url}/env"]
        await fall_behind("late", 6)
        alerting = Alerting(instance_id="a", clock=clock)
        await step(alerting, clock)
        assert [r["json"]["group"]["size"] for r in receiver.requests] == [6]
        assert [r["json"]["group"]["size"] for r in other.requests] == [6]
        assert other.requests[0]["path"] == "/env"
        await alerting.shutdown()
    finally:
        other.close()


async def test_a_refused_summary_is_retried_as_one(hook, receiver, clock, settings) -> None:
    settings.SILLO_NOTIFY_RETRY_DELAY = 30
    receiver.status = 503
    await fall_behind("late", 8)
    alerting = Alerting(instance_id="a", clock=clock)
    await step(alerting, clock)
    (summary,) = await rows(size__gt=0)
    assert (summary.status, summary.attempts) == ("pending", 1)

    receiver.status = 200
    await step(alerting, clock, 31)
    ids = [r["headers"]["X-Sillo-Delivery"] for r in receiver.requests]
    assert ids == [str(summary.pk)] * 2
    assert [r["json"]["group"]["size"] for r in receiver.requests] == [8, 8]
    (summary,) = await rows(size__gt=0)
    assert (summary.status, summary.attempts) == ("sent", 2)
    await alerting.shutdown()


async def test_two_deliverers_carry_each_notification_once(hook, receiver, clock) -> None:
    await fall_behind("late", 30)
    first, second = Alerting(instance_id="a", clock=clock), Alerting(instance_id="b", clock=clock)
    await asyncio.gather(step(first, clock), step(second, clock))
    await asyncio.gather(step(first, clock), step(second, clock))

    members = await rows(size=0)
    summaries = await rows(size__gt=0)
    assert len(members) == 30 and {m.status for m in members} == {"grouped"}
    assert sum(s.size for s in summaries) == 30
    assert {m.group_id for m in members} == {s.pk for s in summaries}
    assert len(receiver.requests) == len(summaries)
    await first.shutdown()
    await second.shutdown()


async def test_grouping_off_sends_each_on_its_own(hook, receiver, clock, settings) -> None:
    settings.SILLO_NOTIFY_GROUP_AT = 0
    await fall_behind("late", 6)
    alerting = Alerting(instance_id="a", clock=clock)
    await step(alerting, clock)
    await step(alerting, clock)
    assert len(receiver.requests) == 6
    assert await rows(size__gt=0) == []
    await alerting.shutdown()


def write(event: str, code: str, now) -> None:
    document = payload.build(
        event=event, schedule_code=code, task_name="test.fail", schedule_id=None, run=None, at=now
    )
    Notification.objects.bulk_create(
        outbox.notifications(
            incident=None, event=event, payload=document, now=now, targets=outbox.targets()
        )
    )


def test_a_summary_names_each_members_error_by_what_was_raised() -> None:
    members = [
        {
            "event": "failed",
            "schedule": "nightly",
            "text": "run 7 failed: 1 final failure in a row",
            "run": {"error": "Traceback (most recent call last):\n  ...\nKeyError: 'x'"},
        },
        {"event": "failed", "schedule": "hourly", "text": "", "run": {"error": "E" * 500}},
    ]
    document = payload.summary(event="failed", members=members, size=2, at=T0)
    first, second = document["text"].splitlines()
    assert first == "nightly: run 7 failed: 1 final failure in a row (KeyError: 'x')"
    assert second.startswith("hourly: failed (EEE") and second.endswith("…)")
    assert len(second) < 160
    assert payload.title_of(document) == "2 schedules are failing"
    assert "Task:" not in payload.body_of(document)
