"""Held runs: a burst beyond the workers waits `queued`, is read once, and each run
starts once, however it ends (an operator's cancel, another scheduler, a shutdown).

The loop runs on the fake clock; the runs execute in a real pool of one worker, so
everything past the first run of a pass is held.
"""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedules import services
from schedules.models import Run, RunReason, RunStatus, Schedule
from schedules.registry import Registry, registry
from schedules.scheduler import claims, hints, outcomes, pace, queued
from schedules.scheduler import recorder as recorder_module
from schedules.scheduler.engine import (
    CANCEL_CHECK_INTERVAL,
    HELD_PASS_INTERVAL,
    HOLD_CHECK_INTERVAL,
    Scheduler,
)
from schedules.scheduler.executor import Executor, Outcome
from schedules.scheduler.pace import Backlog
from schedules.scheduler.pool import PoolLimits, WorkerPool
from schedules.scheduler.recorder import OutcomeRecorder
from tests.factories import (
    T0,
    FakeClock,
    create,
    every,
    held_elsewhere,
    inline_executor,
    lock_run,
    make_schedule,
    runs_of,
)
from tests.scheduler.conftest import pooled_scheduler


@pytest.fixture
async def narrow(clock: FakeClock, transactional_db):
    """A scheduler with one worker and no backlog."""
    async for instance in pooled_scheduler(clock, 1):
        yield instance


async def burst(tmp_path: Path, codes: list[str], *, all_gated: bool = False) -> tuple[Path, Path]:
    """A schedule whose run holds the worker until `gate` exists, then `codes` (which
    hold it too if `all_gated`), all due at the next minute; returns (the log of what
    executed, the gate)."""
    log, gate = tmp_path / "log", tmp_path / "gate"
    await create("first", "test.note", every(60), kwargs={"path": str(log), "label": "first",
                                                          "after": str(gate)})  # fmt: skip
    after = {"after": str(gate)} if all_gated else {}
    for code in codes:
        await create(code, "test.note", every(60),
                     kwargs={"path": str(log), "label": code, **after})  # fmt: skip
    return log, gate


async def a_worker_is_taken(scheduler: Scheduler) -> None:
    """Until a run's body has begun: its worker is set up and taken (a run still
    waiting for one has not begun, and a shutdown queues it again). Runs launched
    together reach the worker in launch order; the shutdown tests still accept any
    of them having taken it, so they test the re-queue, not the order (which
    `test_runs_launched_together_take_the_worker_by_priority_...` does)."""
    for _ in range(1000):
        if scheduler.executor.pool.busy_pids():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("no worker took the first run")


async def another_scheduler_runs_them(clock: FakeClock, codes: list[str], log: Path) -> None:
    """A second scheduler's pass runs each of the queued runs of `codes`, once."""
    other = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    await other.start()
    await other.run_pass()
    await other.wait_idle()
    await other.shutdown()
    assert await statuses(codes) == {code: [RunStatus.SUCCEEDED] for code in codes}
    assert executed(log) == codes


def executed(log: Path) -> list[str]:
    return sorted(log.read_text().split()) if log.exists() else []


async def statuses(codes: list[str]) -> dict[str, list[str]]:
    return {code: [run.status for run in await runs_of(code)] for code in codes}


async def settled(codes: list[str], *, seconds: float = 20.0) -> dict[str, list[str]]:
    """Poll until no run of `codes` is queued or running (real worker processes)."""
    for _ in range(int(seconds / 0.02)):
        now = await statuses(codes)
        pending = (RunStatus.QUEUED, RunStatus.RUNNING)
        if not any(status in pending for runs in now.values() for status in runs):
            return now
        await asyncio.sleep(0.02)
    raise AssertionError(f"runs still pending: {now}")


async def test_a_burst_beyond_the_workers_waits_queued_and_each_run_executes_once(
    narrow, clock, tmp_path
) -> None:
    codes = [f"b{i}" for i in range(5)]
    log, gate = await burst(tmp_path, codes)
    clock.advance(60)
    await narrow.run_pass()
    assert await statuses(["first"]) == {"first": [RunStatus.RUNNING]}
    assert await statuses(codes) == {code: [RunStatus.QUEUED] for code in codes}
    assert len(narrow.held) == 5
    passes = narrow.passes
    gate.touch()
    # No further pass: the held runs start as the worker frees up.
    assert await settled(["first", *codes]) == {c: [RunStatus.SUCCEEDED] for c in ["first", *codes]}
    assert narrow.passes == passes
    assert executed(log) == sorted(["first", *codes])
    assert len(narrow.held) == 0


async def test_a_held_run_an_operator_cancels_never_executes(narrow, clock, tmp_path) -> None:
    codes = ["b0", "b1", "b2"]
    log, gate = await burst(tmp_path, codes)
    clock.advance(60)
    await narrow.run_pass()
    (victim,) = await runs_of("b1")
    await sync_to_async(services.run_cancel)(run=victim, by="alice")
    gate.touch()
    assert await settled(["first", *codes]) == {
        "first": [RunStatus.SUCCEEDED],
        "b0": [RunStatus.SUCCEEDED],
        "b1": [RunStatus.CANCELLED],
        "b2": [RunStatus.SUCCEEDED],
    }
    assert executed(log) == ["b0", "b2", "first"]


async def test_a_held_run_another_scheduler_starts_first_executes_once(
    narrow, clock, tmp_path
) -> None:
    codes = ["b0", "b1", "b2"]
    log, gate = await burst(tmp_path, codes)
    clock.advance(60)
    await narrow.run_pass()
    other = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    await other.start()
    await other.run_pass()  # the queued runs are ordinary queued runs to it
    await other.wait_idle()
    assert executed(log) == codes
    gate.touch()
    await settled(["first", *codes])
    await other.shutdown()
    assert executed(log) == sorted(["first", *codes])  # each once
    assert {(r.status, r.scheduler) for c in codes for r in await runs_of(c)} == {
        (RunStatus.SUCCEEDED, other.instance_id)
    }


async def test_held_runs_stay_queued_when_their_scheduler_stops_and_another_starts_them(
    narrow, clock, tmp_path, settings
) -> None:
    settings.SILLO_SHUTDOWN_GRACE = 0.2
    codes = ["b0", "b1"]
    log, gate = await burst(tmp_path, codes)
    clock.advance(60)
    await narrow.run_pass()
    await a_worker_is_taken(narrow)
    await narrow.shutdown()
    assert await statuses(["first", *codes]) == {
        "first": [RunStatus.CANCELLED],
        "b0": [RunStatus.QUEUED],
        "b1": [RunStatus.QUEUED],
    }
    await another_scheduler_runs_them(clock, codes, log)


async def test_runs_waiting_for_a_worker_at_shutdown_are_queued_again_not_lost(
    clock, transactional_db, tmp_path, settings
) -> None:
    """Runs launched ahead of the workers (the backlog) have not begun when their
    scheduler stops: they go back to the queue, and another scheduler runs them."""
    settings.SILLO_SHUTDOWN_GRACE = 0.2
    codes = ["first", "b0", "b1", "b2"]
    log, gate = await burst(tmp_path, codes[1:], all_gated=True)  # whoever begins, holds
    async for backlogged in pooled_scheduler(clock, 1, backlog=2):
        clock.advance(60)
        await backlogged.run_pass()
        launched = [code for code, runs in (await statuses(codes)).items()
                    if runs == [RunStatus.RUNNING]]  # fmt: skip
        assert len(launched) >= 2  # one taking the worker, the backlog waiting for it
        await a_worker_is_taken(backlogged)
        await backlogged.shutdown()
    after = await statuses(codes)
    (begun,) = [code for code in codes if after[code] == [RunStatus.CANCELLED]]
    rest = sorted(code for code in codes if code != begun)
    assert all(after[code] == [RunStatus.QUEUED] for code in rest)
    waiting = [code for code in launched if code != begun]
    requeued = await sync_to_async(list)(Run.objects.filter(schedule_code__in=waiting))
    assert len(requeued) == len(waiting) >= 1
    assert all(run.scheduler == "" and run.started_at is None for run in requeued)
    assert all("queued again" in run.error for run in requeued)
    gate.touch()
    await another_scheduler_runs_them(clock, rest, log)


async def test_outcomes_gather_until_the_last_launched_run_has_taken_a_worker(
    clock, transactional_db, tmp_path
) -> None:
    """Launched runs that wait for a worker (none held) keep outcomes gathering; the run
    that takes the last worker ends it then, not when a run ends later."""
    codes = ["first", "b0"]
    log, gate = await burst(tmp_path, codes[1:], all_gated=True)  # whoever begins, holds
    ended_with: list[int] = []  # runs still launched when gathering ended

    def spy(scheduler: Scheduler) -> None:
        real = scheduler.recorder.stop_gathering
        scheduler.recorder.stop_gathering = lambda: (
            ended_with.append(scheduler.launched_in_workers()) or real()
        )

    async for backlogged in pooled_scheduler(clock, 1, backlog=1):
        spy(backlogged)
        clock.advance(60)
        await backlogged.run_pass()
        assert len(backlogged.held) == 0  # both launched: one in the worker, one waiting
        await a_worker_is_taken(backlogged)
        assert backlogged.runs_wait()
        gate.touch()
        assert await settled(codes) == {code: [RunStatus.SUCCEEDED] for code in codes}
        assert not backlogged.runs_wait()
        assert 1 in ended_with  # as the second run took the worker, while it ran


async def test_a_run_cancelled_while_it_waits_for_a_worker_outside_a_shutdown_is_cancelled(
    clock, transactional_db, tmp_path
) -> None:
    """Only a shutdown queues a run again: any other stop (an operator's cancel, a CLI
    interrupted, with no reason given) ends it cancelled, as before it began."""
    codes = ["b0", "b1", "b2"]
    log, gate = await burst(tmp_path, codes)
    async for backlogged in pooled_scheduler(clock, 1, backlog=2):
        clock.advance(60)
        await backlogged.run_pass()
        await a_worker_is_taken(backlogged)
        for _ in range(1000):  # launched runs publish their start before they queue
            if backlogged.executor.waiting_for_worker:
                break
            await asyncio.sleep(0.01)
        waiting = next(iter(backlogged.executor.waiting_for_worker))
        waiting.cancel()
        for _ in range(500):  # the run cancelled may be "first" (see a_worker_is_taken)
            ended = await statuses(["first", *codes])
            if any(runs == [RunStatus.CANCELLED] for runs in ended.values()):
                break
            await asyncio.sleep(0.01)
        assert sum(runs == [RunStatus.CANCELLED] for runs in ended.values()) == 1
        gate.touch()


async def test_runs_launched_together_take_the_worker_by_priority_however_slow_their_news(
    clock, transactional_db, tmp_path, monkeypatch, every_group_listened
) -> None:
    """The better run's start reaches the live log late (a slow channel layer): it
    still takes the one free worker first."""
    layer = every_group_listened
    real_send = layer.group_send

    async def slow_for_the_urgent(group, message):
        if message.get("run", {}).get("schedule_code") == "urgent":
            await asyncio.sleep(0.5)
        await real_send(group, message)

    monkeypatch.setattr(layer, "group_send", slow_for_the_urgent)
    log = tmp_path / "log"
    for code, priority in [("routine", 0), ("urgent", 5)]:
        await create(code, "test.note", every(60), priority=priority,
                     kwargs={"path": str(log), "label": code})  # fmt: skip
    async for narrow in pooled_scheduler(clock, 1, backlog=1):
        clock.advance(60)
        await narrow.run_pass()
        await settled(["routine", "urgent"])
    assert log.read_text().split() == ["urgent", "routine"]


async def test_a_closing_executor_begins_no_run_in_a_worker(transactional_db) -> None:
    from schedules.scheduler.executor import SHUT_DOWN, Executor, NotStarted, context_for
    from schedules.scheduler.pool import PoolLimits, WorkerPool

    pool = WorkerPool(PoolLimits(min_workers=0, max_workers=1))
    executor = Executor(pool=pool, sync_workers=1)
    executor.stop_starting()
    schedule = await create("late", "test.echo", every(60))
    run = Run(schedule=schedule, schedule_code="late", task_name="test.echo",
              reason=RunReason.MANUAL)  # fmt: skip
    with pytest.raises(NotStarted) as stopped:
        await executor.execute(registry.get("test.echo"), context_for(run, schedule))
    assert stopped.value.args == (SHUT_DOWN,)
    assert pool.size == 0  # no worker was even started for it
    await executor.shutdown()


# ---------------------------------------------------------------- the database side


def queued_runs(count: int, prefix: str) -> list[Run]:
    runs = []
    for i in range(count):
        schedule = make_schedule(f"{prefix}{i}", "test.echo", every(3600))
        runs.append(Run.objects.create(
            schedule=schedule, schedule_code=schedule.code, task_name="test.echo",
            reason=RunReason.SCHEDULED, slot=T0, not_before=T0,
        ))  # fmt: skip
    return runs


def start(runs: list[Run], **extra) -> list[Run]:
    started, _ = queued.start_held(
        runs=runs, now=T0, instance_id="me", tasks=registry, local_in_flight={}, **extra
    )
    return started


@pytest.mark.django_db
def test_starting_held_runs_reads_no_run_again_and_costs_the_same_for_3_or_300() -> None:
    few, many = queued_runs(3, "few"), queued_runs(300, "many")
    with CaptureQueriesContext(connection) as few_queries:
        assert len(start(few)) == 3
    with CaptureQueriesContext(connection) as many_queries:
        assert len(start(many)) == 300
    assert len(few_queries) == len(many_queries)
    # Held runs are checked by id, never read again (their kwargs are in memory).
    assert not any('"schedules_run"."kwargs"' in q["sql"] for q in many_queries.captured_queries)
    assert set(Run.objects.values_list("status", "scheduler")) == {(RunStatus.RUNNING, "me")}


@pytest.mark.django_db
def test_the_outcomes_still_being_written_cost_a_claim_nothing_per_outcome() -> None:
    """In a burst hundreds of runs have ended and wait for their outcome to be written;
    each claim leaves them out of the runs in flight without naming them in its SQL."""
    one, other = queued_runs(3, "one"), queued_runs(3, "other")
    with CaptureQueriesContext(connection) as few_ended:
        start(one, ended={10**6})
    with CaptureQueriesContext(connection) as many_ended:
        start(other, ended=set(range(10**6, 10**6 + 500)))

    def shapes(queries) -> list[str]:  # the SQL with its ids (of any length) as "0"
        return [re.sub(r"\d+", "0", q["sql"]) for q in queries.captured_queries]

    assert shapes(few_ended) == shapes(many_ended)


@pytest.mark.django_db
def test_an_ended_run_awaiting_its_record_does_not_count_against_max_instances() -> None:
    (run,) = queued_runs(1, "busy")
    earlier = Run.objects.create(
        schedule=run.schedule, schedule_code=run.schedule_code, task_name="test.echo",
        reason=RunReason.SCHEDULED, status=RunStatus.RUNNING, slot=T0 - timedelta(hours=1),
        scheduler="me",
    )  # fmt: skip
    assert [r.status for r in start([run], ended={earlier.pk})] == [RunStatus.RUNNING]
    (again,) = queued_runs(1, "busy_again")
    Run.objects.create(
        schedule=again.schedule, schedule_code=again.schedule_code, task_name="test.echo",
        reason=RunReason.SCHEDULED, status=RunStatus.RUNNING, slot=T0 - timedelta(hours=1),
        scheduler="me",
    )  # fmt: skip
    assert [r.status for r in start([again], ended={earlier.pk})] == [RunStatus.SKIPPED]


@pytest.mark.django_db
def test_a_held_run_no_longer_queued_or_paused_is_left_out() -> None:
    taken, cancelled, paused, kept = queued_runs(4, "h")
    Run.objects.filter(pk=taken.pk).update(status=RunStatus.RUNNING, scheduler="other")
    Run.objects.filter(pk=cancelled.pk).update(status=RunStatus.CANCELLED)
    services.schedule_pause(schedule=paused.schedule, by="tester")
    assert [run.pk for run in start([taken, cancelled, paused, kept])] == [kept.pk]
    assert Run.objects.get(pk=taken.pk).scheduler == "other"


@pytest.mark.django_db
def test_a_run_whose_body_ended_here_does_not_count_against_max_instances() -> None:
    (ended,) = queued_runs(1, "e")
    Run.objects.filter(pk=ended.pk).update(status=RunStatus.RUNNING)
    schedule_id = ended.schedule_id
    assert claims.in_flight_counts([schedule_id], {}, ()) == {schedule_id: 1}
    # Its outcome is still being written: it no longer executes.
    assert claims.in_flight_counts([schedule_id], {}, {ended.pk}) == {}
    # A sync thread of this process that outlived its timeout still does.
    assert claims.in_flight_counts([schedule_id], {schedule_id: 1}, {ended.pk}) == {schedule_id: 1}


def replacing_runs(*statuses: str) -> list[Run]:
    """Runs of one schedule (max_instances=1, overlap="replace"), one slot each."""
    schedule = make_schedule("swap", "test.echo", every(3600), overlap="replace")
    return [
        Run.objects.create(
            schedule=schedule, schedule_code="swap", task_name="test.echo", status=status,
            reason=RunReason.SCHEDULED, slot=T0 + timedelta(minutes=i), not_before=T0,
        )
        for i, status in enumerate(statuses)
    ]  # fmt: skip


@pytest.mark.django_db
def test_replace_within_one_held_batch_cancels_the_earlier_run_before_it_runs() -> None:
    earlier, later = replacing_runs(RunStatus.QUEUED, RunStatus.QUEUED)
    started = {run.pk: run.status for run in start([earlier, later])}
    assert started == {earlier.pk: RunStatus.CANCELLED, later.pk: RunStatus.RUNNING}
    assert dict(Run.objects.values_list("pk", "status")) == started


@pytest.mark.django_db
def test_replace_keeps_a_run_whose_body_ended_here_while_its_outcome_is_written() -> None:
    ended, executing, waiting = replacing_runs(
        RunStatus.RUNNING, RunStatus.RUNNING, RunStatus.QUEUED
    )
    start([waiting], ended={ended.pk})
    assert dict(Run.objects.values_list("pk", "status")) == {
        ended.pk: RunStatus.RUNNING,  # its real outcome is on its way
        executing.pk: RunStatus.CANCELLED,
        waiting.pk: RunStatus.RUNNING,
    }


@pytest.mark.production
def test_replace_leaves_a_run_another_process_is_ending_to_it(transactional_db) -> None:
    """An outcome writer locks its runs, then their schedules; a claim holds the schedule,
    then replaces its running runs. Waiting for the run's lock, the two would wait for
    each other: a run locked elsewhere is left to whoever is ending it."""
    finishing, executing, waiting = replacing_runs(
        RunStatus.RUNNING, RunStatus.RUNNING, RunStatus.QUEUED
    )
    with held_elsewhere(lock_run(finishing.pk)):  # its outcome being written
        start([waiting])
    assert dict(Run.objects.values_list("pk", "status")) == {
        finishing.pk: RunStatus.RUNNING,  # its outcome is being written elsewhere
        executing.pk: RunStatus.CANCELLED,
        waiting.pk: RunStatus.RUNNING,
    }


@pytest.mark.django_db
def test_a_held_run_starts_with_its_schedule_as_edited_since_it_was_held(monkeypatch) -> None:
    edited, untouched = queued_runs(2, "edited")
    as_held = untouched.schedule
    schedule = Schedule.objects.get(pk=edited.schedule_id)
    schedule.timeout, schedule.max_attempts = 5, 4
    schedule.save()  # as an operator's edit does (a form, the admin, the API): updated_at moves
    read_again: list[set[int]] = []
    in_bulk = type(Schedule.objects).in_bulk

    def spy(manager, ids, *args, **kwargs):
        read_again.append(set(ids))
        return in_bulk(manager, ids, *args, **kwargs)

    monkeypatch.setattr(type(Schedule.objects), "in_bulk", spy)
    first, second = start([edited, untouched])
    assert (first.schedule.timeout, first.schedule.max_attempts) == (5, 4)
    # Only the edited schedule was read again: a burst's schedules are read once.
    assert read_again == [{edited.schedule_id}]
    assert second.schedule is as_held


@pytest.mark.django_db
def test_passes_leave_held_runs_to_their_scheduler() -> None:
    held, free = queued_runs(2, "p")
    slots = claims.WorkerSlots(None, lambda name: True)
    runs, _ = queued.claim_queued(
        now=T0, instance_id="me", tasks=registry, limit=10, local_in_flight={}, slots=slots,
        held=[held.pk],
    )  # fmt: skip
    assert [run.pk for run in runs] == [free.pk]
    # Nor does the loop wake for a held run: it waits for a worker, not for a pass.
    next_slot, next_queued = claims.next_times(tasks=registry)
    assert next_queued == T0 and next_slot > T0
    assert claims.next_times(tasks=registry, held=[held.pk]) == (next_slot, None)


async def test_passes_while_runs_wait_for_a_worker_read_the_queue_twice_a_second_at_most(
    clock, transactional_db, tmp_path, monkeypatch
) -> None:
    # Every task needs a worker: while none is free, no queued run could start.
    only_workers = Registry()
    only_workers.declarations = {"test.hold": registry.declarations["test.hold"]}
    limits = PoolLimits(min_workers=0, max_workers=1, kill_grace=0.5, backlog=0)
    executor = Executor(pool=WorkerPool(limits), sync_workers=1)
    scheduler = Scheduler(clock=clock, tasks=only_workers, executor=executor)
    reads: list[str] = []
    for name in ("claim_queued", "to_hold"):
        real = getattr(queued, name)
        monkeypatch.setattr(queued, name, lambda real=real, **kw: reads.append(real.__name__)
                            or real(**kw))  # fmt: skip
    await scheduler.start()
    try:
        for code in ("a", "b", "c"):
            await create(code, "test.hold", every(60), kwargs={"marker_dir": str(tmp_path)})
        clock.advance(60)
        await scheduler.run_pass()
        assert len(scheduler.held) == 2  # one run took the worker; two wait for it
        reads.clear()
        for _ in range(5):  # passes in quick succession, as a steady load brings them
            await scheduler.run_pass()
        assert reads == []
        clock.advance(HOLD_CHECK_INTERVAL)
        await scheduler.run_pass()
        assert reads == ["to_hold"]  # other queued runs join the held ones, by priority
        # A slot due now waits for the next pass: it would wait behind the held line anyway.
        await create("due", "test.hold", every(60), kwargs={"marker_dir": str(tmp_path)})
        clock.advance(60)
        assert await scheduler._sleep_after_pass() == HELD_PASS_INTERVAL
    finally:
        await scheduler.shutdown()


async def test_passes_look_for_runs_ended_elsewhere_twice_a_second_or_at_a_hint(
    scheduler, clock, monkeypatch
) -> None:
    looks: list[int] = []
    real = outcomes.still_running
    monkeypatch.setattr(outcomes, "still_running", lambda run_ids: looks.append(len(run_ids))
                        or real(run_ids))  # fmt: skip
    await create("long", "test.block_async", every(60), kwargs={"gate": "long"})
    clock.advance(60)
    await scheduler.run_pass()  # launched
    await scheduler.run_pass()
    assert looks == []  # a look a moment ago (nothing in flight then): not again yet
    assert 0 < await scheduler._sleep_after_pass() <= CANCEL_CHECK_INTERVAL
    clock.advance(CANCEL_CHECK_INTERVAL)
    await scheduler.run_pass()
    await scheduler.run_pass()
    assert looks == [1]
    hints.wake_local()  # an operator's cancel elsewhere: its wake-up
    await scheduler.run_pass()
    assert looks == [1, 1]


# ---------------------------------------------------------------- the recorder


class StillClock(FakeClock):
    """Time passes only when a wait is woken: a gathering batch waits until told."""

    async def wait(self, seconds: float, wake: asyncio.Event) -> None:
        self.waits.append(seconds)
        await wake.wait()
        wake.clear()


def recorder_writing_to(
    batches: list[int], *, gather, clock=None, others=lambda: False
) -> OutcomeRecorder:
    async def db(fn, *, items, now):
        batches.append(len(items))
        return [(run, None, []) for run, _ in items]

    return OutcomeRecorder(db=db, clock=clock or StillClock(), gather=gather, others=others)


async def test_outcomes_gather_while_runs_wait_for_a_worker_and_go_when_none_does() -> None:
    batches: list[int] = []
    recorder = recorder_writing_to(batches, gather=lambda: True)
    waits = [
        asyncio.ensure_future(recorder.record(Run(pk=i), Outcome(RunStatus.SUCCEEDED)))
        for i in range(3)
    ]
    for _ in range(5):
        await asyncio.sleep(0)
    assert batches == []  # gathering
    recorder.stop_gathering()
    await asyncio.gather(*waits)
    assert batches == [3]


async def test_an_end_of_gathering_left_over_from_an_earlier_burst_does_not_end_the_next() -> None:
    batches: list[int] = []
    recorder = recorder_writing_to(batches, gather=lambda: True)
    recorder.stop_gathering()  # the last burst's runs found workers, with nothing to write
    waits = [
        asyncio.ensure_future(recorder.record(Run(pk=i), Outcome(RunStatus.SUCCEEDED)))
        for i in range(3)
    ]
    for _ in range(5):
        await asyncio.sleep(0)
    assert batches == []  # this burst's outcomes gather
    recorder.stop_gathering()
    await asyncio.gather(*waits)
    assert batches == [3]


async def test_gathered_outcomes_are_written_once_the_gathering_time_has_passed() -> None:
    batches: list[int] = []
    clock = FakeClock()
    recorder = recorder_writing_to(batches, gather=lambda: True, clock=clock)
    await asyncio.gather(
        *(recorder.record(Run(pk=i), Outcome(RunStatus.SUCCEEDED)) for i in range(3))
    )
    assert batches == [3]
    assert clock.waits == [recorder_module.GATHER]


async def test_a_full_batch_is_written_without_waiting_even_while_gathering(monkeypatch) -> None:
    monkeypatch.setattr(recorder_module, "BATCH", 3)
    batches: list[int] = []
    recorder = recorder_writing_to(batches, gather=lambda: True)  # its clock never wakes
    await asyncio.gather(
        *(recorder.record(Run(pk=i), Outcome(RunStatus.SUCCEEDED)) for i in range(3))
    )
    assert batches == [3]


async def test_outcomes_are_written_at_once_when_nothing_waits_for_a_worker() -> None:
    batches: list[int] = []
    recorder = recorder_writing_to(batches, gather=lambda: False)
    await recorder.record(Run(pk=1), Outcome(RunStatus.SUCCEEDED))
    assert batches == [1]


async def test_under_a_steady_load_outcomes_are_written_a_lead_apart() -> None:
    """One write a run cost the database thread a transaction and its fixed queries for
    each outcome; outcomes that finish within a lead of the last write share the next."""
    batches: list[int] = []
    clock = FakeClock()  # a wait moves it by the time waited
    recorder = recorder_writing_to(batches, gather=lambda: False, clock=clock,
                                   others=lambda: True)  # fmt: skip
    await recorder.record(Run(pk=1), Outcome(RunStatus.SUCCEEDED))
    assert batches == [1] and clock.waits == []  # the first one at once
    await asyncio.gather(
        *(recorder.record(Run(pk=i), Outcome(RunStatus.SUCCEEDED)) for i in range(2, 5))
    )
    assert batches == [1, 3]  # finished within the lead: one write, a lead after the last
    assert clock.waits == [pytest.approx(recorder_module.SPACING)]
    clock.advance(1)  # a quiet second: the next outcome is written as it comes
    await recorder.record(Run(pk=5), Outcome(RunStatus.SUCCEEDED))
    assert batches == [1, 3, 1] and len(clock.waits) == 1


async def test_an_outcome_with_no_other_run_in_flight_is_written_at_once() -> None:
    """Runs one after another (a django.tasks worker's, a chain's links) have nothing to
    share a write with: held back, each would only wait."""
    batches: list[int] = []
    recorder = recorder_writing_to(batches, gather=lambda: False)  # its clock never wakes
    for pk in range(1, 4):
        await recorder.record(Run(pk=pk), Outcome(RunStatus.SUCCEEDED))
    assert batches == [1, 1, 1]


async def test_runs_that_begin_to_wait_for_a_worker_during_the_spacing_go_first() -> None:
    batches: list[int] = []
    waiting = False
    recorder = recorder_writing_to(batches, gather=lambda: waiting, others=lambda: True)
    await recorder.record(Run(pk=1), Outcome(RunStatus.SUCCEEDED))
    spaced = asyncio.ensure_future(recorder.record(Run(pk=2), Outcome(RunStatus.SUCCEEDED)))
    for _ in range(5):
        await asyncio.sleep(0)
    waiting = True  # a burst: its runs wait for workers
    recorder.hurry()  # the spacing ends (as a lead passing would) ...
    for _ in range(5):
        await asyncio.sleep(0)
    assert batches == [1]  # ... and the outcome gathers behind the burst instead
    recorder.stop_gathering()
    await spaced
    assert batches == [1, 1]


async def test_a_shutting_down_scheduler_writes_outcomes_without_spacing() -> None:
    batches: list[int] = []
    recorder = recorder_writing_to(batches, gather=lambda: False, others=lambda: True)
    await recorder.record(Run(pk=1), Outcome(RunStatus.SUCCEEDED))
    spaced = asyncio.ensure_future(recorder.record(Run(pk=2), Outcome(RunStatus.SUCCEEDED)))
    for _ in range(5):
        await asyncio.sleep(0)
    assert batches == [1]  # waiting for the lead to pass
    recorder.hurry()
    await spaced
    await recorder.record(Run(pk=3), Outcome(RunStatus.SUCCEEDED))
    assert batches == [1, 1, 1]


@pytest.mark.django_db
def test_a_run_finished_when_its_body_ended_however_late_its_outcome_is_written() -> None:
    (run,) = start(queued_runs(1, "late"))
    ended = T0 + timedelta(seconds=1)
    outcome = Outcome(RunStatus.SUCCEEDED, ended_at=ended)
    outcomes.finish_runs(items=[(run, vars(outcome))], now=T0 + timedelta(seconds=3))
    run.refresh_from_db()
    assert (run.status, run.finished_at) == (RunStatus.SUCCEEDED, ended)


@pytest.mark.django_db
def test_a_retry_waits_from_when_the_failed_body_ended() -> None:
    (run,) = start(queued_runs(1, "retried"))
    ended = T0 + timedelta(seconds=1)
    outcome = Outcome(RunStatus.FAILED, "boom", retry_in=10, ended_at=ended)
    written = T0 + timedelta(seconds=3)
    ((_, retry, _),) = outcomes.finish_runs(items=[(run, vars(outcome))], now=written)
    assert retry.not_before == ended + timedelta(seconds=10)


async def test_the_scheduler_records_the_instant_a_body_ended(clock, transactional_db) -> None:
    scheduler = Scheduler(clock=clock, executor=inline_executor())
    await scheduler.start()
    scheduler.recorder._gather = lambda: True  # as while runs wait for a worker: the clock moves
    await create("ended", "test.echo", every(60))
    clock.advance(60)
    body_ended = clock.now()
    await scheduler.run_pass()
    await scheduler.wait_idle()
    await scheduler.shutdown()
    (run,) = await runs_of("ended")
    assert (run.status, run.finished_at) == (RunStatus.SUCCEEDED, body_ended)
    assert clock.waits[-1] == recorder_module.GATHER  # written a gathering later


# ---------------------------------------------------------------- the backlog's pace


def test_the_backlog_follows_the_workers_pace_within_its_limits() -> None:
    now = [0.0]
    backlog = Backlog(limit=256, floor=8, clock=lambda: now[0])
    assert backlog.size() == 8  # nothing finished yet: one per worker
    for _ in range(100):  # 400 runs a second
        now[0] += 0.0025
        backlog.finished()
    assert backlog.size() == 200  # half a second's work at that pace
    for _ in range(1000):
        now[0] += 0.0001
        backlog.finished()
    assert backlog.size() == 256  # never past SILLO_WORKER_BACKLOG
    now[0] += pace.WINDOW + 0.01  # the workers went quiet (long runs): back to the floor
    assert backlog.size() == 8
    assert Backlog(limit=0, floor=8).size() == 0  # no backlog: the workers only


def test_long_runs_keep_few_runs_waiting_for_a_worker_as_running() -> None:
    now = [0.0]
    backlog = Backlog(limit=256, floor=8, clock=lambda: now[0])
    for _ in range(8):  # eight workers finishing a run each second
        now[0] += 0.125
        backlog.finished()
    assert backlog.size() == 8


async def test_a_held_catch_up_starts_after_a_slot_that_fell_due_later(
    narrow, clock, tmp_path
) -> None:
    """After a restart the backlog's catch-ups are owed work, already late: a slot
    falling due meanwhile takes the next free worker before them."""
    log, gate = await burst(tmp_path, [])
    note = {"path": str(log)}
    await create("behind", "test.note", every(60), misfire="once", misfire_grace=30,
                 kwargs={**note, "label": "behind"}, now=T0 - timedelta(hours=1))  # fmt: skip
    later = {"kind": "interval", "every": 60, "anchor": (T0 + timedelta(seconds=90)).isoformat()}
    await create("current", "test.note", later, kwargs={**note, "label": "current"})
    clock.advance(60)
    await narrow.run_pass()  # "first" takes the worker; the catch-up is held
    clock.advance(30)
    await narrow.run_pass()  # the current slot is held after it
    assert [r.reason for r in await runs_of("behind")] == [RunReason.CATCH_UP]
    assert len(narrow.held) == 2
    gate.touch()
    await settled(["first", "behind", "current"])
    assert log.read_text().split() == ["first", "current", "behind"]


async def test_a_catch_up_still_waiting_when_its_next_slot_comes_is_superseded(
    narrow, clock, tmp_path, settings
) -> None:
    """misfire="once" is one run: the catch-up that no worker took yet gives way to the
    slot that fell due since. misfire="all" owes every slot: its catch-ups all run."""
    settings.SILLO_MAX_CATCH_UP = 2
    log, gate = await burst(tmp_path, [])
    for misfire in ("once", "all"):
        await create(misfire, "test.note", every(60), misfire=misfire, misfire_grace=30,
                     kwargs={"path": str(log), "label": misfire},
                     now=T0 - timedelta(hours=1))  # fmt: skip
    clock.advance(60)
    await narrow.run_pass()  # "first" takes the worker; the catch-ups wait
    clock.advance(60)
    await narrow.run_pass()  # the next slots come while they still wait
    gate.touch()
    ended = await settled(["once", "all"])
    once = await runs_of("once")
    assert [(r.reason, r.status) for r in once] == [
        (RunReason.CATCH_UP, RunStatus.SKIPPED),
        (RunReason.SCHEDULED, RunStatus.SUCCEEDED),
    ]
    assert once[0].error == (
        f"superseded: the slot of {once[1].slot:%Y-%m-%d %H:%M:%S} UTC runs instead (misfire=once)"
    )
    assert ended["all"] == [RunStatus.SUCCEEDED] * 3  # two catch-ups, then the slot
    assert log.read_text().split().count("once") == 1
