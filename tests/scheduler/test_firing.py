"""Claiming and firing slots, waking, and kwargs."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedules import services
from schedules.models import Run, RunReason, RunStatus, Schedule
from schedules.registry import registry
from schedules.scheduler import claims
from schedules.scheduler.engine import Scheduler
from tests.factories import (
    T0,
    FakeClock,
    create,
    every,
    inline_executor,
    plan_of,
    reload,
    runs_of,
    schedule_of,
)
from tests.scheduler.conftest import pooled_scheduler
from tests.taskapp import tasks as test_tasks


async def test_a_due_slot_fires_once_and_moves_to_the_next_slot(scheduler, clock) -> None:
    schedule = await create("tick", "test.echo", every(60))
    assert schedule.next_run_at == T0 + timedelta(seconds=60)

    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    await scheduler.run_pass()  # same instant again: nothing new
    await scheduler.wait_idle()

    runs = await runs_of("tick")
    assert [(r.status, r.reason, r.slot) for r in runs] == [
        (RunStatus.SUCCEEDED, RunReason.SCHEDULED, T0 + timedelta(seconds=60))
    ]
    schedule = await reload(schedule)
    assert schedule.next_run_at == T0 + timedelta(seconds=120)
    assert schedule.run_count == 1
    assert schedule.last_outcome == RunStatus.SUCCEEDED


async def test_nothing_runs_before_its_slot(scheduler, clock, settings) -> None:
    settings.SILLO_CLAIM_AHEAD = 0.05
    await create("later", "test.echo", every(300))
    clock.advance(299)
    delay = await scheduler.run_pass()
    assert await runs_of("later") == []
    # The loop sleeps until the slot less the claim's lead, not a fixed tick.
    assert delay == pytest.approx(0.95)


class SteppedClock(FakeClock):
    """Waits end once a test moves the clock past them (or they are woken)."""

    async def wait(self, seconds: float, wake: asyncio.Event) -> None:
        self.waits.append(seconds)
        until = self.current + timedelta(seconds=seconds)
        while self.current < until and not wake.is_set():
            await asyncio.sleep(0.001)
        wake.clear()


async def idle_stepping(scheduler, clock: SteppedClock) -> None:
    """wait_idle, moving the clock a lead at a time: under a steady load, outcomes are
    written a lead apart on the scheduler's clock (recorder.py)."""
    idle = asyncio.ensure_future(scheduler.wait_idle())
    while not idle.done():
        clock.advance(0.05)
        await asyncio.sleep(0.001)
    await idle


def noting_starts(scheduler, clock) -> list:
    """When the executor is asked to start each run body, on the scheduler's clock."""
    starts = []
    execute = scheduler.executor.execute

    async def noting(*args, **kwargs):
        starts.append(clock.now())
        return await execute(*args, **kwargs)

    scheduler.executor.execute = noting
    return starts


async def test_a_slot_within_the_claim_lead_is_claimed_now_and_starts_at_its_instant(
    scheduler, clock, settings
) -> None:
    """The claim's transaction happens before the slot, so it is no part of the lateness."""
    settings.SILLO_CLAIM_AHEAD = 0.05
    starts = noting_starts(scheduler, clock)
    await create("soon", "test.echo", every(300))
    slot = T0 + timedelta(seconds=300)
    clock.advance(300 - 0.03)
    await scheduler.run_pass()
    await scheduler.wait_idle()

    [run] = await runs_of("soon")
    assert (run.status, run.slot, run.started_at) == (RunStatus.SUCCEEDED, slot, slot)
    assert starts == [slot]  # the body began at its slot, not at the claim
    assert pytest.approx(0.03) in clock.waits
    assert (await reload(await schedule_of("soon"))).next_run_at == slot + timedelta(seconds=300)


async def test_without_a_claim_lead_a_slot_is_claimed_only_once_due(
    scheduler, clock, settings
) -> None:
    settings.SILLO_CLAIM_AHEAD = 0
    await create("soon", "test.echo", every(300))
    clock.advance(300 - 0.03)
    assert await scheduler.run_pass() == pytest.approx(0.03)
    assert await runs_of("soon") == []


async def test_a_run_cancelled_while_it_waits_for_its_slot_never_starts(
    settings, transactional_db
) -> None:
    settings.SILLO_CLAIM_AHEAD = 0.05
    clock = SteppedClock()  # never moved: the wait for the slot lasts until the run is cancelled
    scheduler = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    await scheduler.start()
    try:
        starts = noting_starts(scheduler, clock)
        await create("soon", "test.echo", every(300))
        clock.advance(300 - 0.03)
        await scheduler.run_pass()
        [run] = await runs_of("soon")
        assert run.status == RunStatus.RUNNING

        await scheduler.cancel_local([run.pk], "cancelled by an operator")
        await scheduler.wait_idle()
    finally:
        await scheduler.cancel_local(list(scheduler.in_flight), "the test ended")  # never hang
        await scheduler.shutdown()
    [run] = await runs_of("soon")
    assert (run.status, run.error) == (RunStatus.CANCELLED, "cancelled by an operator")
    assert run.started_at is None  # it never began: no duration, no lateness
    assert starts == []


async def test_sleep_is_capped_by_the_resync_interval(scheduler, clock, settings) -> None:
    settings.SILLO_RESYNC_INTERVAL = 30.0
    settings.SILLO_POLL_INTERVAL = 60.0
    await create("daily", "test.echo", {"kind": "cron", "expression": "0 3 * * *"})
    assert await scheduler.run_pass() == 30.0


async def test_with_nothing_due_the_loop_looks_again_within_the_poll_interval(
    scheduler, clock
) -> None:
    """So a run queued by another process with no channel layer between starts in a second."""
    await create("daily", "test.echo", {"kind": "cron", "expression": "0 3 * * *"})
    assert await scheduler.run_pass() == 1.0
    schedule = await schedule_of("daily")
    await sync_to_async(Run.objects.create)(  # queued by another process, at this moment
        schedule=schedule, schedule_code="daily", task_name="test.echo", reason="manual",
        queued_at=clock.now(), not_before=clock.now(),
    )  # fmt: skip
    clock.advance(1.0)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert [r.status for r in await runs_of("daily")] == [RunStatus.SUCCEEDED]


async def test_a_retry_starts_at_its_delay_not_at_the_next_poll(scheduler, clock, settings) -> None:
    settings.SILLO_POLL_INTERVAL = 30.0
    await create("flaky", "test.fail", every(3600), max_attempts=2, retry_delay=0.25)
    clock.advance(3600)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert await scheduler.run_pass() == 0.25


async def test_kwargs_reach_the_task_unchanged(scheduler, clock) -> None:
    kwargs = {
        "name": "Zoë – 東京 🚀",
        "nested": {"list": [1, 2.5, None, True, {"deep": ["x"]}], "empty": {}},
        "quote": 'he said "hi"\n',
    }
    await create("sync-kw", "test.echo", every(60), kwargs=kwargs)
    await create("async-kw", "test.echo_async", every(60), kwargs=kwargs)
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    for code in ("sync-kw", "async-kw"):
        (run,) = await runs_of(code)
        assert run.status == RunStatus.SUCCEEDED
        assert run.kwargs == kwargs
        assert run.result == kwargs


async def test_two_schedulers_never_run_a_slot_twice(clock, transactional_db) -> None:
    from schedules.registry import registry
    from schedules.scheduler.engine import Scheduler

    for i in range(20):
        await create(f"s{i}", "test.echo", every(10))
    first = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    second = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    await first.start()
    await second.start()
    try:
        for _ in range(5):
            clock.advance(10)
            await asyncio.gather(first.run_pass(), second.run_pass())
            await asyncio.gather(first.wait_idle(), second.wait_idle())
    finally:
        await first.shutdown()
        await second.shutdown()
    for i in range(20):
        slots = [r.slot for r in await runs_of(f"s{i}")]
        assert len(slots) == 5
        assert len(set(slots)) == 5


def test_a_pass_costs_what_is_due_not_what_exists(db, django_assert_num_queries) -> None:
    from tests.factories import make_schedule

    for i in range(30):
        make_schedule(f"far{i}", "test.echo", every(3600 + i))

    def claim():
        return claims.claim_due(
            now=T0 + timedelta(seconds=1), instance_id="x", tasks=registry, limit=500,
            max_catch_up=100, local_in_flight={},
        )  # fmt: skip

    with django_assert_num_queries(1):
        runs, _ = claim()
    assert runs == []
    earliest = min(Schedule.objects.values_list("next_run_at", flat=True))
    with django_assert_num_queries(2):
        assert claims.next_times(tasks=registry) == (earliest, None)


def test_a_steady_claim_reads_the_due_schedules_once_and_their_runs_in_flight_once(db) -> None:
    """Slots claimed ahead, fewer than a batch, the scheduler up before them: the most
    common pass. Every statement is one the database's work needs (each costs the
    scheduler's database thread about a millisecond of query building)."""
    from tests.factories import make_schedule

    for i in range(10):
        make_schedule(f"s{i}", "test.echo", every(60))
    due_by, now = T0 + timedelta(seconds=60.05), T0 + timedelta(seconds=59.98)
    due = Schedule.objects.filter(next_run_at__lte=due_by).count()
    with CaptureQueriesContext(connection) as queries:
        runs, _ = claims.claim_due(
            now=now, due_by=due_by, up_since=T0, instance_id="x", tasks=registry, limit=500,
            max_catch_up=100, local_in_flight={},
        )  # fmt: skip
    assert len(runs) == due > 1
    statements = [q["sql"] for q in queries.captured_queries]
    reads_due = [sql for sql in statements if '"schedules_schedule"."kwargs"' in sql]
    counts = [sql for sql in statements if sql.startswith("SELECT") and "'running'" in sql]
    assert (len(reads_due), len(counts)) == (1, 1), statements
    assert not any("GROUP BY" in sql for sql in counts)  # counted in Python: cheaper to build


@pytest.mark.sqlite
def test_the_scheduler_reads_the_due_index_not_every_schedule_of_a_task(db) -> None:
    from schedules.models import Schedule
    from schedules.registry import registry

    names = registry.runnable_names()
    # The orphans' index on task_name must not take these over (models.EVERY_TASK_NAME):
    # the scheduler would read and sort every schedule of a task to find the due ones.
    for plan in (
        Schedule.objects.due(now=T0, task_names=names).explain(),
        plan_of(lambda: Schedule.objects.next_slot_at(task_names=names), table="schedules_sch"),
    ):
        assert "schedule_due_idx" in plan and "schedule_task_idx" not in plan, plan


@pytest.mark.sqlite
def test_in_flight_counts_read_the_running_runs_not_every_run_a_schedule_kept(db) -> None:
    """Each claim counts the schedule's running runs (max_instances); with retention
    raised a schedule keeps 100,000 runs, which the count must not read."""
    from schedules.models import Run
    from schedules.scheduler import instances
    from schedules.scheduler import queued as queued_runs
    from tests.factories import plan_of

    assert "run_running_idx" in plan_of(lambda: Run.objects.running_counts([1, 2]))
    queued = plan_of(lambda: Run.objects.queued().filter(schedule_id=1).count())
    assert "run_queued_schedule_idx" in queued
    # The queued runs waiting for a worker, not every kept run of their tasks.
    held = plan_of(
        lambda: queued_runs.to_hold(now=T0, task_names=["demo.slow"], held=[1], limit=10)
    )
    assert "run_queued_task_idx" in held and "run_task_recent_idx" not in held, held
    # Each heartbeat's look for runs of dead schedulers, and overlap="replace".
    orphans = plan_of(lambda: instances.recover_crashed(now=T0, stale_after=30.0, host="h"))
    assert "run_running_idx" in orphans and "run_recent_idx" not in orphans, orphans


async def test_a_pass_reads_the_queue_only_when_it_may_have_changed(
    scheduler, clock, monkeypatch
) -> None:
    """Under a steady load passes come every few milliseconds, and the queue (manual
    runs, retries, catch-ups) is usually empty: it is read when something may have
    queued a run, when its earliest run is due, and every SILLO_POLL_INTERVAL."""
    from schedules.conf import setting
    from schedules.scheduler import hints, queued

    poll = setting("SILLO_POLL_INTERVAL")

    reads: list[str] = []
    real = queued.claim_queued
    monkeypatch.setattr(queued, "claim_queued", lambda **kw: reads.append("read") or real(**kw))
    await create("tick", "test.echo", every(1))
    idle = await create("idle", "test.echo", every(86400))
    await create("flaky", "test.fail", every(3600), max_attempts=2, retry_delay=0.25)

    await scheduler.run_pass()  # the first pass reads it
    assert reads == ["read"]
    for _ in range(3):  # slots of a steady load: no read
        clock.advance(0.1)
        await scheduler.run_pass()
    assert reads == ["read"]

    hints.wake_local()  # another process queued a run (a run now) and said so
    await scheduler.run_pass()
    assert reads == ["read"] * 2

    clock.advance(3600 - 0.3)  # "flaky" fails; its retry is queued 0.25 s later
    await scheduler.run_pass()
    await scheduler.wait_idle()
    await scheduler.run_pass()  # the retry was queued here: read, and its time kept
    assert reads == ["read"] * 4
    clock.advance(0.25)
    await scheduler.run_pass()  # its time has come
    await scheduler.wait_idle()
    assert [r.status for r in await runs_of("flaky")] == [RunStatus.FAILED, RunStatus.FAILED]

    reads.clear()
    manual = await sync_to_async(Run.objects.create)(  # queued elsewhere, its hint lost
        schedule=idle, task_name="test.echo", schedule_code="idle", reason=RunReason.MANUAL,
        queued_at=clock.now(), not_before=clock.now(),
    )  # fmt: skip
    clock.advance(poll - 0.05)  # a pass just before the next look: it sleeps until then
    assert await scheduler.run_pass() == pytest.approx(0.05)
    assert reads == []
    clock.advance(0.05)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert reads == ["read"]
    manual = await sync_to_async(Run.objects.get)(pk=manual.pk)
    assert manual.status == RunStatus.SUCCEEDED


@asynccontextmanager
async def claimed_ahead_beside_an_idle_worker():
    """A scheduler with one worker process, up and idle, and the run of schedule "soon"
    claimed 30 ms ahead of its slot (T0 + 600 s), waiting for it: (scheduler, clock).
    Shut down when the block ends, its slot passed first (a failed assertion included:
    the wait would otherwise hold the shutdown for ever)."""
    clock = SteppedClock()
    async for scheduler in pooled_scheduler(clock, workers=1):
        try:
            await create("soon", "test.echo", every(300))
            clock.advance(300)
            await scheduler.run_pass()
            await scheduler.wait_idle()  # the worker is up and idle
            clock.advance(300 - 0.03)
            await scheduler.run_pass()  # claims the next slot ahead; its run waits for it
            yield scheduler, clock
        finally:
            if not scheduler._stopping:
                clock.advance(1)
                await scheduler.shutdown()


async def test_a_run_claimed_ahead_still_starts_at_its_slot_when_its_scheduler_stops(
    settings, transactional_db
) -> None:
    """Not sent back to the queue as a run waiting for a worker is: a slot due at the
    stop would then run whenever a scheduler next started, past its misfire rules."""
    settings.SILLO_CLAIM_AHEAD = 0.05
    async with claimed_ahead_beside_an_idle_worker() as (scheduler, clock):
        stopping = asyncio.create_task(scheduler.shutdown())
        for _ in range(20):
            await asyncio.sleep(0.001)
        clock.advance(0.03)  # the slot
        await stopping
    runs = await runs_of("soon")
    slot = T0 + timedelta(seconds=600)
    assert [(r.status, r.slot, r.started_at) for r in runs][1:] == [
        (RunStatus.SUCCEEDED, slot, slot)
    ]


async def test_runs_claimed_ahead_do_not_count_as_waiting_for_a_worker(
    settings, transactional_db
) -> None:
    """Outcomes gather while runs wait for a worker (recorder.py). Counted as waiting, the
    runs a steady load claims ahead kept them gathering for seconds, and one batch of
    hundreds then held the database thread, and the claims behind it."""
    settings.SILLO_CLAIM_AHEAD = 0.05
    async with claimed_ahead_beside_an_idle_worker() as (scheduler, clock):
        assert scheduler.launched_in_workers() == 1
        assert not scheduler.runs_wait()
        clock.advance(0.03)
        await scheduler.wait_idle()


async def test_a_slot_not_yet_due_of_a_schedule_at_max_instances_is_claimed_at_its_instant(
    scheduler, clock, settings
) -> None:
    """Claimed ahead it would be skipped for a run that may end before the slot comes."""
    settings.SILLO_CLAIM_AHEAD = 0.05
    await create("busy", "test.block_async", every(300), kwargs={"gate": "busy"})
    clock.advance(300)
    await scheduler.run_pass()  # the first run, still running
    clock.advance(300 - 0.03)
    delay = await scheduler.run_pass()
    assert len(await runs_of("busy")) == 1  # the next slot is left for now ...
    assert delay == pytest.approx(0.03)  # ... to the pass at its instant
    test_tasks.async_gates["busy"].set()  # the first run ends before the slot
    await scheduler.wait_idle()
    clock.advance(0.03)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert [r.status for r in await runs_of("busy")] == [RunStatus.SUCCEEDED] * 2


async def test_a_run_claimed_ahead_records_when_it_really_began(settings, transactional_db) -> None:
    """The claim writes the slot as its start; a loop that wakes late shows in the run."""
    settings.SILLO_CLAIM_AHEAD = 0.05
    clock = SteppedClock()
    scheduler = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    await scheduler.start()
    try:
        await create("soon", "test.echo", every(300))
        clock.advance(300 - 0.03)
        await scheduler.run_pass()
        [run] = await runs_of("soon")
        assert run.started_at == T0 + timedelta(seconds=300)  # as claimed
        clock.advance(0.03 + 0.2)  # the loop wakes 0.2 s after the slot
        await scheduler.wait_idle()
    finally:
        clock.advance(1)  # a run still waiting for its slot starts, and ends
        await scheduler.shutdown()
    [run] = await runs_of("soon")
    assert run.status == RunStatus.SUCCEEDED
    assert run.started_at == T0 + timedelta(seconds=300.2)


async def test_a_steady_load_is_claimed_a_lead_of_slots_at_a_time(
    settings, transactional_db, monkeypatch
) -> None:
    """One pass per slot cost a claim's fixed 5 ms of the ORM's Python for each run (most
    of a core at 100 runs a second); a pass takes the slots of the lead after its own."""
    settings.SILLO_CLAIM_AHEAD = 0.05
    for i in range(20):  # slots 10 ms apart: 100 runs a second
        anchor = (T0 + timedelta(seconds=300 + i / 100)).isoformat()
        await create(f"s{i:02}", "test.echo", {"kind": "interval", "every": 300, "anchor": anchor})
    claiming = []
    claim_due = claims.claim_due

    def counted(**kwargs):
        runs, replaced = claim_due(**kwargs)
        claiming.append(len(runs))
        return runs, replaced

    monkeypatch.setattr(claims, "claim_due", counted)
    clock = SteppedClock(T0 + timedelta(seconds=299))
    scheduler = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    await scheduler.start()
    try:
        for _ in range(100):  # as run_forever: a pass, then its sleep
            if sum(claiming) >= 20:
                break
            clock.advance(await scheduler.run_pass())
        clock.advance(1)
        await idle_stepping(scheduler, clock)
    finally:
        await scheduler.shutdown()
    runs = await sync_to_async(list)(Run.objects.order_by("slot"))
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED] * 20
    assert all(r.started_at >= r.slot for r in runs)  # claimed ahead, none began early
    # 200 ms of slots in passes a lead (50 ms) apart, not one pass for each.
    assert len([n for n in claiming if n]) <= 5


@pytest.fixture
async def waiting_for_its_slot(settings, transactional_db):
    """A scheduler on the real date whose next run is claimed ahead and waits for its
    slot as long as a test likes (services stamp the real time)."""
    settings.SILLO_CLAIM_AHEAD = 0.05
    start = datetime.now(UTC)
    clock = SteppedClock(start)  # never moved past the slot: the run waits until cancelled
    scheduler = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    await scheduler.start()
    yield scheduler, clock, start
    await scheduler.cancel_local(list(scheduler.in_flight), "the test ended")  # never hang
    await scheduler.shutdown()


async def until_recorded(scheduler: Scheduler, clock: SteppedClock, code: str) -> None:
    """Until every run of this schedule is recorded. Not wait_idle(): on the real date,
    another schedule's slot may fall within the claim lead too (a hung CI run's tasks
    showed one), and its run would wait for its slot for ever on this clock. The clock
    moves in small steps meanwhile: outcomes that end close together are written a
    lead apart (recorder.py)."""
    ours = [scheduler.in_flight.get(run.pk) for run in await runs_of(code)]
    tasks = [task for task in ours if task is not None]
    while tasks and not all(task.done() for task in tasks):
        await asyncio.wait(tasks, timeout=0.005)
        clock.advance(0.01)


async def test_an_operator_cancel_before_its_slot_records_no_start(waiting_for_its_slot) -> None:
    scheduler, clock, start = waiting_for_its_slot
    schedule = await create("soon", "test.echo", every(300), now=start)
    clock.current = schedule.next_run_at - timedelta(seconds=0.03)
    await scheduler.run_pass()
    [run] = await runs_of("soon")
    await sync_to_async(services.run_cancel)(run=run, by="alice")
    await scheduler._notice_cancelled()
    await until_recorded(scheduler, clock, "soon")
    [run] = await runs_of("soon")
    assert (run.status, run.started_at) == (RunStatus.CANCELLED, None)
    assert run.finished_at is not None


async def test_a_run_replaced_before_its_slot_records_no_start(waiting_for_its_slot) -> None:
    scheduler, clock, start = waiting_for_its_slot
    schedule = await create("soon", "test.echo", every(300), now=start, overlap="replace")
    clock.current = schedule.next_run_at - timedelta(seconds=0.03)
    await scheduler.run_pass()
    await sync_to_async(services.schedule_run_now)(schedule=schedule)
    scheduler.hint()
    await scheduler.run_pass()  # the manual run replaces the one waiting for its slot
    await until_recorded(scheduler, clock, "soon")
    waiting, manual = await runs_of("soon")
    assert (waiting.status, waiting.error) == (RunStatus.CANCELLED, "replaced by a newer run")
    assert waiting.started_at is None
    assert manual.status == RunStatus.SUCCEEDED


async def test_slots_past_a_batch_are_still_claimed_ahead_beside_a_left_one(
    settings, transactional_db
) -> None:
    """A pass that left a busy schedule's slot and claimed others is followed at once:
    the batch may have held back more slots than the one it left."""
    settings.SILLO_CLAIM_AHEAD = 0.05
    settings.SILLO_CLAIM_BATCH = 2
    clock = SteppedClock()  # runs claimed ahead wait until the test moves the clock
    scheduler = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    await scheduler.start()
    try:
        # Read in priority order at one instant: the busy one, then a; b is past the batch.
        await create("busy", "test.block_async", every(300), kwargs={"gate": "left"}, priority=9)
        await create("a", "test.echo", every(300), priority=5)
        await create("b", "test.echo", every(300))
        clock.advance(300)
        for _ in range(3):
            await scheduler.run_pass()
        clock.advance(300 - 0.04)
        delays = [await scheduler.run_pass()]
        while delays[-1] == 0 and len(delays) < 5:
            delays.append(await scheduler.run_pass())
        assert (len(await runs_of("a")), len(await runs_of("b"))) == (2, 2)  # both ahead
        assert len(await runs_of("busy")) == 1  # left to its instant ...
        assert delays[-1] == pytest.approx(0.04)  # ... which the loop sleeps until
    finally:
        clock.advance(1)  # the runs waiting for their slot start, and end
        test_tasks.async_gates.setdefault("left", asyncio.Event()).set()
        await scheduler.shutdown()
