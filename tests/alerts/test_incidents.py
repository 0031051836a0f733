"""Incidents opened and closed by the real scheduler on the fake clock, with their outbox."""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async

from schedules import services
from schedules.alerts import checks
from schedules.models import Run, RunCounter, RunStatus, Schedule, ScheduleStatus
from tests.factories import create, every, reload, runs_of
from tests.taskapp import tasks as test_tasks

from .conftest import drive, incidents, notifications, timeline


async def test_three_failed_attempts_open_one_incident_and_one_notification(
    scheduler, clock, channel
) -> None:
    await create("flaky", "test.fail", every(600), max_attempts=3, retry_delay=1)
    await drive(scheduler, clock, seconds=600)
    await drive(scheduler, clock, seconds=1)
    await drive(scheduler, clock, seconds=2)
    assert [r.status for r in await runs_of("flaky")] == ["failed"] * 3
    (incident,) = await incidents("flaky")
    assert incident.kind == "failing" and incident.is_open
    (note,) = await notifications("flaky")
    assert note.event == "failed" and note.status == "pending" and note.channel_id == channel.pk
    runs = await runs_of("flaky")
    assert note.payload["run"]["id"] == runs[-1].pk
    assert note.payload["run"]["attempt"] == 3
    assert note.payload["run"]["error"] == "RuntimeError: boom"
    assert set(note.payload) >= {"event", "schedule", "task", "run", "url", "at"}
    assert note.payload["task"] == "test.fail"
    assert note.payload["url"].startswith("http://localhost:8000/schedules/")
    assert (
        await reload(await sync_to_async(Schedule.objects.get)(code="flaky"))
    ).consecutive_failures == 1


async def test_the_next_success_closes_it_as_recovered_with_the_timeline(
    scheduler, clock, channel
) -> None:
    schedule = await create("wobbly", "test.fail", every(60))
    await drive(scheduler, clock, seconds=60, passes=2)
    await sync_to_async(Schedule.objects.filter(pk=schedule.pk).update)(task_name="test.echo")
    await drive(scheduler, clock, seconds=60)
    (incident,) = await incidents("wobbly")
    assert incident.closed_at == clock.now()
    assert [e for e, _ in await timeline(incident)] == ["failed", "failed", "recovered"]
    assert [n.event for n in await notifications("wobbly")] == ["failed", "recovered"]
    schedule = await reload(schedule)
    assert schedule.consecutive_failures == 0
    assert schedule.last_success_at == clock.now()


async def test_the_breaker_pauses_after_n_failures_and_resume_closes_it(
    scheduler, clock, channel
) -> None:
    schedule = await create("broken", "test.fail", every(60), alert={"pause_after": 2})
    await drive(scheduler, clock, seconds=60, passes=3)
    schedule = await reload(schedule)
    assert schedule.status == ScheduleStatus.PAUSED
    assert schedule.pause_reason == "auto-paused after 2 final failures in a row"
    assert len(await runs_of("broken")) == 2  # the third slot did not fire
    kinds = {i.kind: i for i in await incidents("broken")}
    assert set(kinds) == {"failing", "auto_paused"}
    assert [n.event for n in await notifications("broken")] == ["failed", "auto_paused"]

    await sync_to_async(services.schedule_resume)(schedule=schedule, by="ann")
    schedule = await reload(schedule)
    assert schedule.status == ScheduleStatus.ACTIVE and schedule.pause_reason == ""
    auto = [i for i in await incidents("broken") if i.kind == "auto_paused"][0]
    assert auto.closed_at is not None
    assert (await timeline(auto))[-1] == ("closed", "resumed by ann")


async def test_a_half_open_probe_resumes_a_schedule_that_works_again(
    scheduler, clock, channel
) -> None:
    schedule = await create(
        "probe-me", "test.fail", every(3600), alert={"pause_after": 1, "probe_after": 300}
    )
    await drive(scheduler, clock, seconds=3600)
    assert (await reload(schedule)).status == ScheduleStatus.PAUSED
    await sync_to_async(Schedule.objects.filter(pk=schedule.pk).update)(task_name="test.echo")
    clock.advance(200)
    assert await sync_to_async(checks.check_probes)(now=clock.now()) == 0
    clock.advance(100)
    assert await sync_to_async(checks.check_probes)(now=clock.now()) == 1
    assert await sync_to_async(checks.check_probes)(now=clock.now()) == 0  # one at a time
    await drive(scheduler, clock, seconds=0)
    schedule = await reload(schedule)
    assert schedule.status == ScheduleStatus.ACTIVE
    assert all(not i.is_open for i in await incidents("probe-me"))


async def test_a_failed_probe_is_not_retried_so_no_retries_pile_up_behind_the_pause(
    scheduler, clock, channel
) -> None:
    """Each retry of a probe waited out the pause, one more a cool-down, and all of them
    ran at once when a later probe succeeded."""
    schedule = await create(
        "probe-me", "test.fail", every(3600), max_attempts=3, retry_delay=1,
        alert={"pause_after": 1, "probe_after": 300},
    )  # fmt: skip
    await drive(scheduler, clock, seconds=3600)
    for _ in range(3):  # the scheduled run's attempts, then the pause
        await drive(scheduler, clock, seconds=2)
    assert (await reload(schedule)).status == ScheduleStatus.PAUSED
    before = len(await runs_of("probe-me"))
    for _ in range(2):  # two probes, each failing
        clock.advance(300)
        assert await sync_to_async(checks.check_probes)(now=clock.now()) == 1
        await drive(scheduler, clock, seconds=0)
        await drive(scheduler, clock, seconds=2)

    probes = (await runs_of("probe-me"))[before:]
    assert [(r.reason, r.status) for r in probes] == [("manual", "failed")] * 2
    assert not await sync_to_async(Run.objects.filter(status=RunStatus.QUEUED).exists)()
    assert (await reload(schedule)).status == ScheduleStatus.PAUSED


async def test_a_slot_nobody_claimed_is_late_once_and_an_on_time_slot_closes_it(
    scheduler, clock, channel
) -> None:
    schedule = await create("nightly", "test.echo", every(3600), misfire_grace=60)
    clock.advance(3600 + 61)  # no pass: as if every scheduler were down
    assert await sync_to_async(checks.check_late)(now=clock.now()) == 1
    assert await sync_to_async(checks.check_late)(now=clock.now()) == 0
    (incident,) = await incidents("nightly")
    assert incident.kind == "late" and "passed its 60s grace" in incident.summary
    assert [n.event for n in await notifications("nightly")] == ["late"]
    await scheduler.run_pass()  # claimed late: misfire=skip records a skipped run
    await scheduler.wait_idle()
    assert (await incidents("nightly"))[0].is_open
    await drive(
        scheduler,
        clock,
        seconds=(await reload(schedule)).next_run_at.timestamp() - clock.now().timestamp(),
    )
    (incident,) = await incidents("nightly")
    assert not incident.is_open and "fired on time" in (await timeline(incident))[-1][1]


async def test_a_scheduler_that_reaches_a_slot_past_its_grace_opens_late(
    scheduler, clock, channel
) -> None:
    await create("catchup", "test.echo", every(600), misfire_grace=30, misfire="once")
    await drive(scheduler, clock, seconds=600 + 31)
    (incident,) = await incidents("catchup")
    assert incident.kind == "late"
    assert [r.reason for r in await runs_of("catchup")] == ["catch-up"]


async def test_a_run_past_its_maximum_is_stuck_until_it_ends(scheduler, clock, channel) -> None:
    await create("hanging", "test.block_async", every(600), alert={"max_duration": 120})
    clock.advance(600)
    await scheduler.run_pass()
    clock.advance(100)
    assert await sync_to_async(checks.check_stuck)(now=clock.now()) == 0
    clock.advance(21)
    assert await sync_to_async(checks.check_stuck)(now=clock.now()) == 1
    assert await sync_to_async(checks.check_stuck)(now=clock.now()) == 0
    (incident,) = await incidents("hanging")
    assert incident.kind == "stuck" and incident.is_open
    assert [n.event for n in await notifications("hanging")] == ["stuck"]
    test_tasks.async_gates.setdefault("default", asyncio.Event()).set()
    await scheduler.wait_idle()
    (incident,) = await incidents("hanging")
    assert not incident.is_open


async def test_pausing_by_hand_closes_a_late_incident(scheduler, clock, channel) -> None:
    schedule = await create("idle", "test.echo", every(60), misfire_grace=5)
    clock.advance(70)
    await sync_to_async(checks.check_late)(now=clock.now())
    await sync_to_async(services.schedule_pause)(schedule=schedule)
    assert not (await incidents("idle"))[0].is_open


async def test_outcomes_are_logged_at_their_level_with_the_run_in_the_record(
    scheduler, clock, caplog
) -> None:
    await create("noisy", "test.fail", every(600), max_attempts=2, retry_delay=1)
    await create("quiet", "test.echo", every(600))
    with caplog.at_level(logging.INFO, logger="schedules.outcomes"):
        await drive(scheduler, clock, seconds=600)
        await drive(scheduler, clock, seconds=1)
    records = [r for r in caplog.records if r.name == "schedules.outcomes"]
    by_level = {(r.levelname, r.schedule) for r in records}
    assert by_level == {("WARNING", "noisy"), ("ERROR", "noisy"), ("INFO", "quiet")}
    error = next(r for r in records if r.levelname == "ERROR")
    runs = await runs_of("noisy")
    assert (error.run_id, error.task_name, error.attempt) == (runs[-1].pk, "test.fail", 2)


async def test_run_counters_never_drop_when_a_schedule_or_its_runs_go(scheduler, clock) -> None:
    schedule = await create("counted", "test.echo", every(60))
    await drive(scheduler, clock, seconds=60, passes=3)

    @sync_to_async
    def counted() -> float:
        return RunCounter.objects.get(schedule_code="counted", name="runs:succeeded").value

    assert await counted() == 3
    await sync_to_async(Run.objects.filter(schedule_code="counted").delete)()
    await sync_to_async(services.schedule_delete)(schedule=schedule)
    assert await counted() == 3


async def test_failures_before_a_rule_threshold_open_nothing(scheduler, clock, channel) -> None:
    await create("tolerant", "test.fail", every(60), alert={"after_failures": 3})
    await drive(scheduler, clock, seconds=60, passes=2)
    assert await incidents("tolerant") == []
    await drive(scheduler, clock, seconds=60)
    assert [i.kind for i in await incidents("tolerant")] == ["failing"]
    assert (await runs_of("tolerant"))[0].status == RunStatus.FAILED


async def test_deleting_a_schedule_closes_its_open_incidents(scheduler, clock, channel) -> None:
    schedule = await create("doomed", "test.fail", every(60))
    await drive(scheduler, clock, seconds=60)
    await sync_to_async(services.schedule_delete)(schedule=schedule)
    (incident,) = await incidents("doomed")
    assert not incident.is_open and incident.schedule_id is None
    assert (await timeline(incident))[-1] == ("closed", "the schedule was deleted")
