"""dispatch="enqueue": the scheduler records and enqueues, a worker executes."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django_tasks_db.models import DBTaskResult

from schedules import services
from schedules.models import Run, RunStatus, SchedulerInstance
from schedules.registry import registry
from schedules.scheduler import claims, dispatch
from tests.factories import create, every, make_schedule, runs_of


@pytest.fixture(autouse=True, scope="module")
def _close_the_worker_runtime():
    """The worker runtime lives as long as its process; here, as long as this module."""
    yield
    from schedules.scheduler.worker import close_worker_runtime

    close_worker_runtime()


async def test_the_scheduler_enqueues_instead_of_executing(scheduler, clock) -> None:
    await create("pooled", "test.echo", every(60), dispatch="enqueue", kwargs={"a": [1]})
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("pooled")
    assert (run.status, run.dispatch, run.scheduler) == (RunStatus.QUEUED, "enqueue", "")
    task = await sync_to_async(DBTaskResult.objects.get)()
    assert task.args_kwargs["args"] == [run.pk]
    assert task.task_path == "schedules.scheduler.dispatch.execute_run"
    # Queued pool runs do not keep the scheduler awake.
    await scheduler.run_pass()
    assert (await runs_of("pooled"))[0].status == RunStatus.QUEUED
    slot, queued_at = await sync_to_async(claims.next_times)(tasks=registry)
    assert queued_at is None and slot > clock.now()


@pytest.mark.django_db(transaction=True)
def test_a_worker_executes_and_records_the_run() -> None:
    schedule = make_schedule("pooled", "test.echo", every(3600), dispatch="enqueue",
                             kwargs={"region": "eu"})  # fmt: skip
    run = services.schedule_run_now(schedule=schedule)
    assert DBTaskResult.objects.count() == 1
    dispatch.execute_run.call(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert run.result == {"region": "eu"}
    assert run.scheduler.startswith("worker-")
    worker = SchedulerInstance.objects.get(id=run.scheduler)
    assert worker.kind == "worker" and worker.stopped_at is None  # alive between runs
    schedule.refresh_from_db()
    assert (schedule.run_count, schedule.last_outcome) == (1, "succeeded")


@pytest.mark.django_db(transaction=True)
def test_worker_runs_keep_timeouts_and_retries() -> None:
    schedule = make_schedule("pooled-hang", "test.hang", every(3600), dispatch="enqueue",
                             timeout=0.05, max_attempts=2, retry_delay=30)  # fmt: skip
    first = services.schedule_run_now(schedule=schedule)
    dispatch.execute_run.call(first.pk)
    first.refresh_from_db()
    assert first.status == RunStatus.TIMED_OUT
    retry = Run.objects.get(attempt=2)
    assert (retry.status, retry.dispatch, retry.reason) == ("queued", "enqueue", "retry")
    task = DBTaskResult.objects.order_by("-enqueued_at").first()
    assert task.args_kwargs["args"] == [retry.pk]
    assert task.run_after - retry.queued_at >= timedelta(seconds=29)


@pytest.mark.django_db(transaction=True)
def test_a_worker_does_not_run_a_run_that_is_not_queued() -> None:
    schedule = make_schedule("pooled", "test.echo", every(3600), dispatch="enqueue")
    run = services.schedule_run_now(schedule=schedule)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    dispatch.execute_run.call(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED


@pytest.mark.django_db(transaction=True)
def test_a_worker_run_a_rate_limit_defers_goes_back_to_its_pool_for_later() -> None:
    schedule = make_schedule("pooled-gentle", "test.echo", every(3600), dispatch="enqueue",
                             rate_limit=1, rate_period=60, rate_mode="wait")  # fmt: skip
    first = services.schedule_run_now(schedule=schedule)
    dispatch.execute_run.call(first.pk)
    second = services.schedule_run_now(schedule=schedule)
    dispatch.execute_run.call(second.pk)
    second.refresh_from_db()
    assert second.status == RunStatus.QUEUED  # deferred: no token for a minute
    assert second.error.startswith("rate limit: waiting")
    tasks = DBTaskResult.objects.filter(args_kwargs__args=[second.pk]).order_by("enqueued_at")
    assert tasks.count() == 2  # enqueued when made, and again when deferred
    assert tasks.last().run_after == second.not_before


@pytest.mark.django_db(transaction=True)
def test_a_closed_worker_runtime_leaves_no_loop_task_or_hint_behind() -> None:
    """A stopped loop left open is ended by the garbage collector whenever it runs, on
    whichever thread, closing its pending tasks' coroutines there; and a scheduler left
    registered is woken by every hint of the process after its worker closed."""
    from schedules.scheduler import hints
    from schedules.scheduler.worker import close_worker_runtime, worker_runtime

    close_worker_runtime()  # an earlier test's, whose record this test's database lacks
    runtime = worker_runtime()
    loop, scheduler = runtime.loop, runtime.scheduler
    assert scheduler in hints._local
    close_worker_runtime()
    assert loop.is_closed()
    assert not runtime.thread.is_alive()
    assert all(task.done() for task in asyncio.all_tasks(loop))  # its heartbeat included
    assert scheduler not in hints._local
    [record] = SchedulerInstance.objects.filter(pk=scheduler.instance_id)
    assert record.stopped_at is not None
