"""Chains: `then` and `catch` follow-ups, on the fake clock (docs/chains.md)."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

import schedules
from schedules import services
from schedules.chains import InvalidChain
from schedules.models import Run, RunReason, RunStatus, Schedule
from schedules.registry import registry
from schedules.scheduler import instances, outcomes
from tests.factories import create, every, make_schedule, runs_of, schedule_of
from tests.taskapp import tasks as test_tasks

# Follow-up schedules: a slot far beyond any test, so only chains run them.
HOUR = every(30 * 86400)


async def drain(scheduler, passes: int = 6) -> None:
    """Passes until the queue (follow-ups of follow-ups included) is empty."""
    for _ in range(passes):
        await scheduler.run_pass()
        await scheduler.wait_idle()


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def run_now(code: str, clock, **options) -> Run:
    """A manual run, queued at the fake clock's now (the service stamps the real time)."""
    schedule = await schedule_of(code)
    run = await sync_to_async(services.schedule_run_now)(schedule=schedule, **options)
    await sync_to_async(Run.objects.filter(pk=run.pk).update)(
        queued_at=clock.now(), not_before=clock.now()
    )
    return run


async def only(code: str) -> Run:
    (run,) = await runs_of(code)
    return run


async def test_then_runs_the_follow_up_after_a_success(scheduler, clock) -> None:
    await create("b", "test.echo", HOUR, kwargs={"step": "b"})
    await create("a", "test.echo", every(60), then=["b"])
    clock.advance(60)
    await drain(scheduler)
    upstream, follow = await only("a"), await only("b")
    assert upstream.status == RunStatus.SUCCEEDED
    assert (follow.status, follow.reason, follow.parent_id, follow.depth) == (
        RunStatus.SUCCEEDED, RunReason.CHAINED, upstream.pk, 1,
    )  # fmt: skip
    assert follow.slot is None and follow.result == {"step": "b"}


async def test_catch_runs_after_a_failure_and_then_does_not(scheduler, clock) -> None:
    await create("ok", "test.echo", HOUR)
    await create("rescue", "test.echo", HOUR)
    await create("broken", "test.fail", every(60), then=["ok"], catch=["rescue"])
    clock.advance(60)
    await drain(scheduler)
    assert (await only("broken")).status == RunStatus.FAILED
    assert (await only("rescue")).status == RunStatus.SUCCEEDED
    assert await runs_of("ok") == []


async def test_then_does_not_fire_on_failure_nor_catch_on_success(scheduler, clock) -> None:
    await create("rescue", "test.echo", HOUR)
    await create("fine", "test.echo", every(60), catch=["rescue"])
    clock.advance(60)
    await drain(scheduler)
    assert await runs_of("rescue") == []


async def test_the_result_is_passed_merged_over_the_stored_kwargs(scheduler, clock) -> None:
    await create("load", "test.echo", HOUR, kwargs={"table": "t", "data": "stored"})
    await create("extract", "test.echo", every(60), kwargs={"rows": [1, 2]},
                 then=["load"], result_as="data")  # fmt: skip
    clock.advance(60)
    await drain(scheduler)
    follow = await only("load")
    assert follow.kwargs == {"table": "t", "data": {"rows": [1, 2]}}
    assert follow.result == follow.kwargs  # the task received it


async def test_a_catch_follow_up_receives_the_failure(scheduler, clock) -> None:
    await create("rescue", "test.echo", HOUR)
    await create("broken", "test.fail", every(60), kwargs={"message": "disk full"},
                 catch=["rescue"], result_as="failure")  # fmt: skip
    clock.advance(60)
    await drain(scheduler)
    failed = await only("broken")
    assert (await only("rescue")).kwargs == {
        "failure": {
            "run": failed.pk,
            "schedule": "broken",
            "status": "failed",
            "error": failed.error,
        }
    }


@pytest.mark.django_db
def test_result_as_is_checked_against_the_follow_ups_signature() -> None:
    make_schedule("strict", "test.fail", HOUR)  # fail(message="boom"): no `data`
    with pytest.raises(InvalidChain) as caught:
        make_schedule("up", "test.echo", HOUR, then=["strict"], result_as="data")
    assert caught.value.problems == {
        "result_as": (
            "strict (test.fail) does not take data: got an unexpected keyword argument 'data'"
        )
    }
    assert not Schedule.objects.filter(code="up").exists()


@pytest.mark.django_db
def test_a_cycle_is_refused_at_save_with_the_path() -> None:
    make_schedule("c", "test.echo", HOUR)
    make_schedule("b", "test.echo", HOUR, then=["c"])
    a = make_schedule("a", "test.echo", HOUR, then=["b"])
    c = Schedule.objects.get(code="c")
    with pytest.raises(InvalidChain) as caught:
        services.schedule_update(schedule=c, trigger=c.trigger, catch=["a"])
    assert caught.value.problems == {"catch": "a cycle: c catch a then b then c"}
    with pytest.raises(InvalidChain) as caught:
        services.schedule_update(schedule=a, trigger=a.trigger, then=["a"])
    assert caught.value.problems == {"then": "a cycle: a then a"}
    assert Schedule.objects.get(code="c").catch == []


@pytest.mark.django_db
def test_the_chain_graph_reads_the_schedules_with_follow_ups_not_every_schedule() -> None:
    """Every save's cycle check and every schedule page read the graph: through the
    partial index of the schedules that name follow-ups (a scan of 100,000 schedules'
    JSON took 35 ms of a schedule page on PostgreSQL)."""
    from django.db import connection, transaction

    from schedules.chains import graph

    for i in range(200):
        make_schedule(f"plain-{i:03d}", "test.echo", HOUR)
    make_schedule("c", "test.echo", HOUR)
    make_schedule("b", "test.echo", HOUR, catch=["c"])
    make_schedule("a", "test.echo", HOUR, then=["b", "c"])
    assert graph() == {"a": [("then", "b"), ("then", "c")], "b": [("catch", "c")]}
    read = Schedule.objects.with_follow_ups().values_list("code", "then", "catch")
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE schedules_schedule")
            # A table this small is read whole whatever the indexes; without that
            # choice, the plan says whether the partial index fits the query.
            cursor.execute("SET LOCAL enable_seqscan = off")
        plan = read.explain()
    assert "schedule_follow_ups_idx" in plan, plan


@pytest.mark.django_db
def test_an_unknown_follow_up_code_is_refused() -> None:
    with pytest.raises(InvalidChain) as caught:
        make_schedule("a", "test.echo", HOUR, then="b, nope")
    assert caught.value.problems == {"then": "no schedule 'b'"}


@pytest.mark.django_db
@override_settings(SILLO_CHAIN_MAX_DEPTH=2)
def test_a_chain_past_the_depth_limit_is_refused_at_save() -> None:
    make_schedule("d", "test.echo", HOUR)
    make_schedule("c", "test.echo", HOUR)
    make_schedule("b", "test.echo", HOUR, then=["c"])
    make_schedule("a", "test.echo", HOUR, then=["b"])  # a b c: two follow-ups, allowed
    c = Schedule.objects.get(code="c")
    with pytest.raises(InvalidChain) as caught:
        services.schedule_update(schedule=c, trigger=c.trigger, then=["d"])
    assert caught.value.problems == {
        "then": (
            "the chain would be 3 follow-ups long, more than SILLO_CHAIN_MAX_DEPTH (2): "
            "a then b then c then d"
        )
    }


@override_settings(SILLO_CHAIN_MAX_DEPTH=3)
async def test_at_run_time_the_depth_limit_stops_a_chain_with_the_reason(scheduler, clock) -> None:
    # A cycle the gate never saw (written straight to the table, as an old release could).
    await create("ping", "test.echo", every(60))
    await create("pong", "test.echo", HOUR, then=["ping"])
    await sync_to_async(Schedule.objects.filter(code="ping").update)(then=["pong"])
    clock.advance(60)
    await drain(scheduler, passes=8)
    runs = await sync_to_async(lambda: list(Run.objects.order_by("pk")))()
    assert [(r.schedule_code, r.depth, r.status) for r in runs] == [
        ("ping", 0, "succeeded"), ("pong", 1, "succeeded"), ("ping", 2, "succeeded"),
        ("pong", 3, "succeeded"), ("ping", 4, "skipped"),
    ]  # fmt: skip
    assert runs[-1].error == "skipped: the chain is 4 follow-ups deep (SILLO_CHAIN_MAX_DEPTH=3)"


@pytest.fixture
def twin_task():
    """A task name declared twice (a duplicate) for one test."""

    def first() -> None: ...

    def second() -> None: ...

    for body in (first, second):
        schedules.task("test.chain_twin", isolation="inline")(body)
    yield "test.chain_twin"
    registry.declarations.pop("test.chain_twin", None)


async def test_paused_cancelled_orphan_duplicate_and_missing_follow_ups_are_skipped(
    scheduler, clock, twin_task
) -> None:
    for code in ("held", "gone-for-good", "lost", "deleted"):
        await create(code, "test.echo", HOUR)
    await create("twin", "test.echo", HOUR)
    await create("up", "test.echo", every(60),
                 then=["held", "gone-for-good", "lost", "deleted", "twin"])  # fmt: skip
    await sync_to_async(Schedule.objects.filter(code="twin").update)(task_name=twin_task)
    await sync_to_async(services.schedule_pause)(schedule=await schedule_of("held"))
    await sync_to_async(services.schedule_cancel)(schedule=await schedule_of("gone-for-good"))
    await sync_to_async(Schedule.objects.filter(code="lost").update)(task_name="no.such.task")
    await sync_to_async(Schedule.objects.filter(code="deleted").delete)()
    clock.advance(60)
    await drain(scheduler)
    upstream = await only("up")
    skipped = {
        r.schedule_code: r.error
        for r in await sync_to_async(list)(Run.objects.filter(reason=RunReason.CHAINED))
    }
    assert skipped == {
        "held": "skipped: follow-up schedule 'held' is paused",
        "gone-for-good": "skipped: follow-up schedule 'gone-for-good' is cancelled",
        "lost": "skipped: task 'no.such.task' is not declared (orphan)",
        "deleted": "skipped: follow-up schedule 'deleted' does not exist",
        "twin": "skipped: task 'test.chain_twin' is declared more than once (duplicate), in "
        "tests.scheduler.test_chains.twin_task.<locals>.first, "
        "tests.scheduler.test_chains.twin_task.<locals>.second",
    }
    statuses = await sync_to_async(list)(
        Run.objects.filter(reason=RunReason.CHAINED).values_list("status", "parent_id")
    )
    assert set(statuses) == {(RunStatus.SKIPPED, upstream.pk)}


async def test_catch_fires_once_after_the_last_retry(scheduler, clock) -> None:
    await create("rescue", "test.echo", HOUR)
    await create("flaky", "test.fail", every(3600), max_attempts=3, retry_delay=10,
                 catch=["rescue"])  # fmt: skip
    clock.advance(3600)
    await drain(scheduler, passes=1)
    assert [r.status for r in await runs_of("flaky")] == ["failed", "queued"]
    assert await runs_of("rescue") == []
    clock.advance(10)
    await drain(scheduler, passes=1)
    assert await runs_of("rescue") == []  # attempt 2 failed, attempt 3 still to come
    clock.advance(20)
    await drain(scheduler)
    attempts = await runs_of("flaky")
    assert [(r.attempt, r.status) for r in attempts] == [
        (1, "failed"),
        (2, "failed"),
        (3, "failed"),
    ]
    follow = await only("rescue")
    assert (follow.parent_id, follow.status) == (attempts[-1].pk, RunStatus.SUCCEEDED)


async def test_then_fires_once_when_a_retry_succeeds(scheduler, clock, tmp_path) -> None:
    marker = tmp_path / "ready"
    await create("next", "test.echo", HOUR)
    await create("rescue", "test.echo", HOUR)
    await create("eventually", "test.until_file", every(3600), kwargs={"path": str(marker)},
                 max_attempts=3, retry_delay=10, then=["next"], catch=["rescue"])  # fmt: skip
    clock.advance(3600)
    await drain(scheduler, passes=1)
    marker.write_text("here")
    clock.advance(10)
    await drain(scheduler)
    first, second = await runs_of("eventually")
    assert (first.status, second.status) == (RunStatus.FAILED, RunStatus.SUCCEEDED)
    assert (await only("next")).parent_id == second.pk
    assert await runs_of("rescue") == []


async def test_a_chain_of_three_runs_in_order_each_linked_to_its_parent(scheduler, clock) -> None:
    await create("step3", "test.echo", HOUR, kwargs={"n": 3})
    await create("step2", "test.echo", HOUR, kwargs={"n": 2}, then=["step3"])
    await create("step1", "test.echo", every(60), kwargs={"n": 1}, then=["step2"])
    clock.advance(60)
    await drain(scheduler)
    one, two, three = await only("step1"), await only("step2"), await only("step3")
    assert [r.status for r in (one, two, three)] == ["succeeded"] * 3
    assert (two.parent_id, three.parent_id) == (one.pk, two.pk)
    assert (one.depth, two.depth, three.depth) == (0, 1, 2)
    assert one.finished_at <= two.started_at and two.finished_at <= three.started_at


async def test_a_manual_run_triggers_follow_ups_unless_it_is_this_one_only(
    scheduler, clock
) -> None:
    await create("b", "test.echo", HOUR)
    await create("a", "test.echo", HOUR, then=["b"])
    first = await run_now("a", clock)
    await drain(scheduler)
    assert (await only("b")).parent_id == first.pk
    await run_now("a", clock, follow_ups=False)
    await drain(scheduler)
    assert len(await runs_of("a")) == 2
    assert len(await runs_of("b")) == 1


async def test_a_follow_up_waits_for_a_free_instance_instead_of_being_skipped(
    scheduler, clock
) -> None:
    await create("busy", "test.block_async", HOUR, kwargs={"gate": "busy"})
    await create("up", "test.echo_async", HOUR, then=["busy"])
    await run_now("busy", clock)
    await scheduler.run_pass()
    await run_now("up", clock)
    for _ in range(4):  # the upstream runs; its follow-up finds "busy" at max_instances
        await scheduler.run_pass()
        await settle()
        clock.advance(1)
    manual, follow = await runs_of("busy")
    assert (manual.status, follow.status) == (RunStatus.RUNNING, RunStatus.QUEUED)
    test_tasks.async_gates["busy"].set()
    await scheduler.wait_idle()
    clock.advance(1)
    await drain(scheduler)
    manual, follow = await runs_of("busy")
    assert (manual.status, follow.status) == (RunStatus.SUCCEEDED, RunStatus.SUCCEEDED)


@pytest.mark.django_db(transaction=True)
def test_an_outcome_recorded_twice_queues_its_follow_ups_once() -> None:
    make_schedule("b", "test.echo", HOUR)
    a = make_schedule("a", "test.echo", HOUR, then=["b"])
    run = services.schedule_run_now(schedule=a)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, scheduler="x")
    run = Run.objects.select_related("schedule").get(pk=run.pk)
    outcome = {"status": RunStatus.SUCCEEDED, "error": "", "traceback": "", "result": 1,
               "retry_in": None}  # fmt: skip
    ((done, retry, follow_ups),) = outcomes.finish_runs(items=[(run, outcome)], now=a.created_at)
    assert done.pk == run.pk and retry is None
    assert [f.schedule_code for f in follow_ups] == ["b"]
    # Another process replaying the same outcome finds the run no longer running.
    again = Run.objects.select_related("schedule").get(pk=run.pk)
    assert outcomes.finish_runs(items=[(again, outcome)], now=a.created_at) == [(None, None, [])]
    assert Run.objects.filter(reason=RunReason.CHAINED).count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_interrupted_run_of_a_dead_scheduler_triggers_its_catch_once() -> None:
    make_schedule("rescue", "test.echo", HOUR)
    a = make_schedule("a", "test.echo", HOUR, catch=["rescue"])
    run = services.schedule_run_now(schedule=a)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, scheduler="dead-one")
    for _ in range(2):  # two schedulers recovering the same dead one
        instances.recover_crashed(now=a.created_at, stale_after=30, host="elsewhere")
    assert Run.objects.get(pk=run.pk).status == RunStatus.INTERRUPTED
    (follow,) = Run.objects.filter(reason=RunReason.CHAINED)
    assert (follow.schedule_code, follow.parent_id, follow.status) == (
        "rescue",
        run.pk,
        RunStatus.QUEUED,
    )


@pytest.mark.django_db(transaction=True)
def test_a_worker_of_dispatch_enqueue_queues_the_follow_ups_too() -> None:
    # Imported here: the worker runtime module starts nothing at import, but this test
    # alone needs it (and closes the runtime it starts).
    from django_tasks_db.models import DBTaskResult

    from schedules.scheduler import dispatch
    from schedules.scheduler.worker import close_worker_runtime

    make_schedule("b", "test.echo", HOUR, dispatch="enqueue", kwargs={"on": "pool"})
    a = make_schedule("a", "test.echo", HOUR, dispatch="enqueue", then=["b"])
    try:
        run = services.schedule_run_now(schedule=a)
        dispatch.execute_run.call(run.pk)
        (follow,) = Run.objects.filter(reason=RunReason.CHAINED)
        assert (follow.parent_id, follow.status, follow.dispatch) == (
            run.pk,
            RunStatus.QUEUED,
            "enqueue",
        )
        # Enqueued on the pool in the same transaction: two tasks, one per run.
        assert DBTaskResult.objects.count() == 2
        dispatch.execute_run.call(follow.pk)
        follow.refresh_from_db()
        assert (follow.status, follow.result) == (RunStatus.SUCCEEDED, {"on": "pool"})
    finally:
        close_worker_runtime()


async def test_a_run_failed_at_claim_time_starts_its_catch_in_the_same_pass(
    scheduler, clock
) -> None:
    await create("rescue", "test.echo", HOUR)
    unfit = await create("unfit", "test.fail", every(60), catch=["rescue"])
    # Its kwargs no longer fit the task: its slot's run fails when claimed.
    await sync_to_async(Schedule.objects.filter(pk=unfit.pk).update)(kwargs={"old_name": 1})
    clock.advance(59.5)
    await scheduler.run_pass()  # the queue was just read: nothing else says to read it again
    clock.advance(0.5)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert (await only("unfit")).status == RunStatus.FAILED
    assert (await only("rescue")).status == RunStatus.SUCCEEDED
