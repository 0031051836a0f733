"""Overlap, misfire, timeouts and retries: the scheduler semantics table."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from asgiref.sync import sync_to_async

from schedules import services
from schedules.models import RunReason, RunStatus
from schedules.scheduler import hints
from schedules.signals import run_finished
from tests.factories import T0, create, every, reload, runs_of, schedule_of
from tests.taskapp import tasks as test_tasks


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_slot_during_a_running_run_is_skipped_with_the_reason(scheduler, clock) -> None:
    await create("busy", "test.block_async", every(10), kwargs={"gate": "busy"})
    clock.advance(10)
    await scheduler.run_pass()
    clock.advance(10)
    await scheduler.run_pass()

    first, second = await runs_of("busy")
    assert first.status == RunStatus.RUNNING
    assert second.status == RunStatus.SKIPPED
    assert second.error == "skipped: 1 run(s) still in flight (max_instances=1)"
    assert second.slot == T0 + timedelta(seconds=20)

    test_tasks.async_gates["busy"].set()
    await scheduler.wait_idle()
    first, _ = await runs_of("busy")
    assert first.status == RunStatus.SUCCEEDED


async def test_max_instances_allows_that_many_at_once(scheduler, clock) -> None:
    await create("wide", "test.block_async", every(10), kwargs={"gate": "wide"}, max_instances=2)
    for _ in range(3):
        clock.advance(10)
        await scheduler.run_pass()
    statuses = [r.status for r in await runs_of("wide")]
    assert statuses == [RunStatus.RUNNING, RunStatus.RUNNING, RunStatus.SKIPPED]


async def test_overlap_replace_cancels_the_running_one(scheduler, clock) -> None:
    await create(
        "fresh", "test.block_async", every(10), kwargs={"gate": "fresh"}, overlap="replace"
    )
    clock.advance(10)
    await scheduler.run_pass()
    clock.advance(10)
    await scheduler.run_pass()
    await settle()
    first, second = await runs_of("fresh")
    assert first.status == RunStatus.CANCELLED
    assert first.error == "replaced by a newer run"
    assert second.status == RunStatus.RUNNING
    # The replaced run's body ran: it counts on its schedule, once.
    schedule = await schedule_of("fresh")
    assert (schedule.run_count, schedule.last_outcome) == (1, RunStatus.CANCELLED)
    test_tasks.async_gates["fresh"].set()
    await scheduler.wait_idle()
    assert (await runs_of("fresh"))[1].status == RunStatus.SUCCEEDED
    assert (await schedule_of("fresh")).run_count == 2


async def test_misfire_skip_records_one_skipped_run_with_the_count(scheduler, clock) -> None:
    schedule = await create("late-skip", "test.echo", every(60), misfire_grace=30)
    clock.advance(60 * 10 + 45)  # ten slots passed while "down", the last 45 s ago
    await scheduler.run_pass()
    (run,) = await runs_of("late-skip")
    assert run.status == RunStatus.SKIPPED
    assert run.error.startswith("10 slot(s) missed, the first 585s late (misfire=skip)")
    schedule = await reload(schedule)
    assert schedule.next_run_at == T0 + timedelta(seconds=660)


async def test_misfire_skip_still_runs_the_latest_slot_within_its_grace(scheduler, clock) -> None:
    """A slot that fell due a moment ago is no misfire, whatever the ones before it were:
    after a restart it runs, though its schedule was caught up after it fell due."""
    finished = []

    def note(sender, run, **kwargs):
        finished.append((run.status, run.slot))

    schedule = await create("late-skip", "test.echo", every(60), misfire_grace=30)
    clock.advance(60 * 10 + 5)  # ten slots passed while "down", the last 5 s ago
    run_finished.connect(note)
    try:
        await scheduler.run_pass()
        await scheduler.wait_idle()
        await scheduler.hooks.drain()
    finally:
        run_finished.disconnect(note)
    skipped, ran = sorted(await runs_of("late-skip"), key=lambda run: run.slot)
    # Both are reported as they end, the skip's record at once.
    assert sorted(finished) == [(RunStatus.SKIPPED, skipped.slot), (RunStatus.SUCCEEDED, ran.slot)]
    assert (skipped.status, skipped.slot) == (RunStatus.SKIPPED, T0 + timedelta(seconds=540))
    assert skipped.error.startswith("9 slot(s) missed, the first 545s late (misfire=skip)")
    assert skipped.pk < ran.pk  # histories list the run of the latest slot first
    assert (ran.reason, ran.status, ran.slot) == (
        RunReason.SCHEDULED,
        RunStatus.SUCCEEDED,
        T0 + timedelta(seconds=600),
    )
    assert (await reload(schedule)).next_run_at == T0 + timedelta(seconds=660)


async def test_misfire_once_runs_one_catch_up(scheduler, clock) -> None:
    await create("late-once", "test.echo", every(60), misfire="once", misfire_grace=30)
    clock.advance(60 * 10 + 5)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("late-once")
    assert (run.reason, run.status, run.slot) == (
        RunReason.CATCH_UP,
        RunStatus.SUCCEEDED,
        T0 + timedelta(seconds=600),
    )


async def test_misfire_all_runs_each_missed_slot_in_turn(scheduler, clock, settings) -> None:
    settings.SILLO_MAX_CATCH_UP = 5
    await create("late-all", "test.echo", every(60), misfire="all", misfire_grace=30)
    clock.advance(60 * 8 + 5)  # 8 missed, the last 5 are caught up
    for _ in range(8):
        await scheduler.run_pass()
        await scheduler.wait_idle()
        clock.advance(1)
    runs = await runs_of("late-all")
    assert [r.slot for r in runs] == [T0 + timedelta(seconds=60 * k) for k in range(4, 9)]
    assert {r.reason for r in runs} == {RunReason.CATCH_UP}
    assert {r.status for r in runs} == {RunStatus.SUCCEEDED}


async def test_a_cron_down_for_weeks_catches_up_its_latest_slot(scheduler, clock) -> None:
    minutely = {"kind": "cron", "expression": "* * * * *", "tz": "UTC"}
    await create("weeks-once", "test.echo", minutely, misfire="once", misfire_grace=30)
    clock.advance(3 * 7 * 86_400 + 5)  # three weeks: more slots than the count's cap
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("weeks-once")
    # The slot of now, not the last one the capped count reached a week in.
    assert (run.reason, run.slot) == (RunReason.CATCH_UP, T0 + timedelta(weeks=3))
    await create("weeks-skip", "test.echo", minutely, misfire_grace=30, now=clock.now())
    clock.advance(3 * 7 * 86_400)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    skipped, ran = sorted(await runs_of("weeks-skip"), key=lambda run: run.slot)
    assert skipped.error.startswith("9999+ slot(s) missed")
    # The slot of now (5 s ago, within its grace, due while the scheduler was up) runs;
    # the skip counts the ones before it.
    now_slot = clock.now().replace(second=0, microsecond=0)
    assert (ran.slot, ran.status) == (now_slot, RunStatus.SUCCEEDED)
    assert skipped.slot == now_slot - timedelta(minutes=1)


async def test_a_slightly_late_slot_within_grace_runs_normally(scheduler, clock) -> None:
    await create("grace", "test.echo", every(60), misfire_grace=30)
    clock.advance(85)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("grace")
    assert (run.reason, run.status) == (RunReason.SCHEDULED, RunStatus.SUCCEEDED)


async def test_an_async_task_past_its_timeout_is_cancelled(scheduler, clock) -> None:
    await create("hangs", "test.hang", every(60), timeout=0.05)
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("hangs")
    assert run.status == RunStatus.TIMED_OUT
    assert run.error == "timed out after 0.05s"
    assert (await schedule_of("hangs")).error_count == 1


async def test_a_sync_task_past_its_timeout_keeps_its_slot_until_it_returns(
    scheduler, clock
) -> None:
    await create("stuck", "test.block_sync", every(60), timeout=0.05)
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("stuck")
    assert run.status == RunStatus.TIMED_OUT

    # The thread still runs: the next slot finds the instance occupied.
    clock.advance(60)
    await scheduler.run_pass()
    _, second = await runs_of("stuck")
    assert second.status == RunStatus.SKIPPED

    test_tasks.sync_gate.set()
    for _ in range(100):
        if not scheduler.executor.lingering_counts():
            break
        await asyncio.sleep(0.01)
    test_tasks.sync_gate.clear()
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    third = (await runs_of("stuck"))[2]
    assert third.status == RunStatus.TIMED_OUT  # it ran (and blocked) again


async def test_failures_retry_with_exponential_backoff(scheduler, clock) -> None:
    await create("retries", "test.fail", every(3600), max_attempts=3, retry_delay=10)
    clock.advance(3600)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    first, retry = await runs_of("retries")
    assert (first.status, first.attempt) == (RunStatus.FAILED, 1)
    assert "RuntimeError: boom" in first.error
    assert "Traceback" in first.traceback
    assert (retry.status, retry.reason, retry.attempt) == (RunStatus.QUEUED, RunReason.RETRY, 2)
    assert retry.not_before == clock.now() + timedelta(seconds=10)
    assert retry.slot == first.slot

    clock.advance(9)
    await scheduler.run_pass()
    assert (await runs_of("retries"))[1].status == RunStatus.QUEUED
    clock.advance(1)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    runs = await runs_of("retries")
    assert runs[2].not_before == clock.now() + timedelta(seconds=20)  # 10 * 2**1

    clock.advance(20)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    runs = await runs_of("retries")
    assert [(r.attempt, r.status) for r in runs] == [
        (1, RunStatus.FAILED),
        (2, RunStatus.FAILED),
        (3, RunStatus.FAILED),
    ]
    schedule = await schedule_of("retries")
    assert (schedule.run_count, schedule.error_count) == (3, 3)


async def test_retry_delay_is_capped(scheduler, clock, settings) -> None:
    settings.SILLO_MAX_RETRY_DELAY = 15
    await create("capped", "test.fail", every(3600), max_attempts=5, retry_delay=10)
    clock.advance(3600)
    for _ in range(3):
        await scheduler.run_pass()
        await scheduler.wait_idle()
        clock.advance(100)
    runs = await runs_of("capped")
    delays = [(r.not_before - r.queued_at).total_seconds() for r in runs if r.attempt > 1]
    assert delays == [10, 15, 15]


async def test_timeouts_are_retried_too(scheduler, clock) -> None:
    await create(
        "slow-retry", "test.hang", every(3600), timeout=0.02, max_attempts=2, retry_delay=1
    )
    clock.advance(3600)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    clock.advance(1)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    runs = await runs_of("slow-retry")
    assert [(r.attempt, r.status) for r in runs] == [
        (1, RunStatus.TIMED_OUT),
        (2, RunStatus.TIMED_OUT),
    ]


async def test_a_paused_schedules_retry_waits_and_runs_after_resume(scheduler, clock) -> None:
    schedule = await create("flaky", "test.fail", every(3600), max_attempts=2, retry_delay=1)
    clock.advance(3600)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    await sync_to_async(services.schedule_pause)(schedule=schedule)
    clock.advance(5)
    assert await scheduler.run_pass() > 0  # no spin on a waiting retry
    await scheduler.wait_idle()
    assert [r.status for r in await runs_of("flaky")] == [RunStatus.FAILED, RunStatus.QUEUED]
    await sync_to_async(services.schedule_resume)(schedule=schedule, now=clock.now())
    hints.wake_local()  # the resume's wake hint, as runscheduler's listener delivers it
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert [r.status for r in await runs_of("flaky")] == [RunStatus.FAILED, RunStatus.FAILED]


def queue_and_claim_one(queued_runs: list[tuple]) -> list[str]:
    """Queue (schedule, reason, not_before) runs, then claim with one worker free:
    the schedule codes of the runs that started."""
    from schedules.models import Run
    from schedules.registry import registry
    from schedules.scheduler import claims, queued

    Run.objects.all().delete()
    for schedule, reason, not_before in queued_runs:
        Run.objects.create(
            schedule=schedule, schedule_code=schedule.code, task_name="test.echo",
            reason=reason, not_before=not_before,
        )  # fmt: skip
    runs, _ = queued.claim_queued(
        now=T0, instance_id="s", tasks=registry, limit=10, local_in_flight={},
        slots=claims.WorkerSlots(1, lambda name: True),
    )  # fmt: skip
    return [run.schedule_code for run in runs]


async def test_queued_runs_start_by_priority_then_time(clock, transactional_db) -> None:
    low = await create("low", "test.echo", every(3600), priority=-10)
    high = await create("high", "test.echo", every(3600), priority=20)
    waited = [(low, "manual", T0 - timedelta(minutes=2)),  # the low one waited longer
              (high, "manual", T0 - timedelta(minutes=1))]  # fmt: skip
    assert await sync_to_async(queue_and_claim_one)(waited) == ["high"]


async def test_a_queued_catch_up_starts_as_if_queued_a_minute_later(
    clock, transactional_db
) -> None:
    """A restart's catch-ups are already late: the runs queued since (a manual run, a
    retry, a slot that found no worker) go first, unless the catch-up has waited
    longer than CATCH_UP_DEFER: under a load that never lets up it still starts."""
    from schedules.models import CATCH_UP_DEFER

    behind = await create("behind", "test.echo", every(3600))
    asked = await create("asked", "test.echo", every(3600))

    def catch_up_waited(waited: timedelta) -> list[tuple]:
        return [(behind, "catch-up", T0 - waited), (asked, "manual", T0 - timedelta(seconds=1))]

    claim = sync_to_async(queue_and_claim_one)
    assert await claim(catch_up_waited(CATCH_UP_DEFER - timedelta(seconds=5))) == ["asked"]
    assert await claim(catch_up_waited(CATCH_UP_DEFER + timedelta(seconds=5))) == ["behind"]


async def test_a_one_shot_missed_beyond_its_grace_completes(scheduler, clock) -> None:
    at = (T0 + timedelta(minutes=5)).isoformat()
    await create("once", "test.echo", {"kind": "date", "at": at}, misfire_grace=60)
    clock.advance(3600)  # the scheduler was down when its only slot came
    await scheduler.run_pass()
    await scheduler.wait_idle()
    schedule = await schedule_of("once")
    assert (schedule.status, schedule.next_run_at) == ("completed", None)
    (run,) = await runs_of("once")
    assert run.status == RunStatus.SKIPPED
