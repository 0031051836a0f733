"""Django's own tasks (django.tasks) scheduled as they are, run on their own backend and queue."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.tasks import Task, task_backends

import schedules
from schedules import services
from schedules.models import Run, RunStatus
from schedules.registry import registry
from schedules.scheduler import dispatch
from schedules.scheduler.worker import close_worker_runtime, worker_runtime
from tests.factories import create, every, make_schedule, runs_of
from tests.taskapp import django_jobs
from tests.taskapp import tasks as test_tasks


@pytest.fixture
def pool():
    """The DummyBackend "pool" of tests.settings: it keeps what is enqueued on it."""
    backend = task_backends["pool"]
    backend.clear()
    yield backend
    backend.clear()


@pytest.fixture
def clean_registry():
    before = {name: list(found) for name, found in registry.declarations.items()}
    yield registry
    registry.declarations.clear()
    registry.declarations.update(before)


@pytest.fixture(autouse=True, scope="module")
def _close_the_worker_runtime():
    """The worker runtime lives as long as its process; here, as long as this module."""
    yield
    close_worker_runtime()


def test_stacking_declares_the_function_and_leaves_the_django_task_as_it_is() -> None:
    assert isinstance(test_tasks.django_report, Task)  # still enqueueable by its own code
    declaration = registry.get("test.django_report")
    assert declaration.func is test_tasks.django_report.func
    assert declaration.django_task is test_tasks.django_report
    assert (declaration.options.dispatch, declaration.options.priority) == ("enqueue", 7)
    assert declaration.problems == []


def test_schedule_declares_an_existing_task_under_its_dotted_path() -> None:
    declaration = registry.get("tests.taskapp.tasks.django_cleanup")
    assert declaration.django_task is test_tasks.django_cleanup
    assert declaration.options.dispatch == "enqueue"


@pytest.mark.django_db
def test_schedule_gives_a_django_task_a_code_default(clean_registry) -> None:
    nightly = django_jobs.nightly
    assert schedules.schedule(nightly, name="test.nightly", cron="0 3 * * *") is nightly
    declaration = registry.get("test.nightly")
    assert declaration.default_trigger.to_spec()["expression"] == "0 3 * * *"
    services.sync_code_defaults()
    created = services.Schedule.objects.get(code="test.nightly")
    assert (created.task_name, created.dispatch, created.source) == (
        "test.nightly",
        "enqueue",
        "code",
    )


def test_plain_functions_keep_their_default_of_running_in_the_scheduler() -> None:
    assert registry.get("test.echo").options.dispatch == "inline"
    assert registry.get("test.echo").django_task is None


async def test_a_slot_is_enqueued_on_the_tasks_own_backend_queue_and_priority(
    scheduler, clock
) -> None:
    await create("report", "test.django_report", every(60), kwargs={"region": "us"})
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("report")
    assert (run.status, run.dispatch, run.scheduler) == (RunStatus.QUEUED, "enqueue", "")
    # Backends are per thread: read the one the scheduler's database thread enqueued on.
    (result,) = await scheduler.db(lambda: list(task_backends["pool"].results))
    assert result.task.func is dispatch.execute_run.func
    assert (result.task.backend, result.task.queue_name, result.task.priority) == (
        "pool",
        "reports",
        7,
    )
    assert result.args == [run.pk]


@pytest.mark.django_db(transaction=True)
def test_the_worker_runs_the_django_tasks_function_and_records_the_run(pool) -> None:
    schedule = make_schedule("report", "test.django_report", every(3600), kwargs={"region": "us"})
    assert schedule.dispatch == "enqueue"  # the task's choice, not the model's default
    run = services.schedule_run_now(schedule=schedule)
    (result,) = pool.results
    assert result.args == [run.pk]
    dispatch.execute_run.call(*result.args)  # what the pool's worker does
    run.refresh_from_db()
    assert (run.status, run.result) == (
        RunStatus.SUCCEEDED,
        {"region": "us", "via": "django.tasks"},
    )
    assert run.scheduler.startswith("worker-")
    schedule.refresh_from_db()
    assert (schedule.run_count, schedule.last_outcome) == (1, "succeeded")


@pytest.mark.django_db(transaction=True)
def test_a_retry_goes_to_the_same_queue_later(pool, clean_registry) -> None:
    schedules.schedule(django_jobs.flaky, name="test.django_flaky")
    schedule = make_schedule(
        "flaky", "test.django_flaky", every(3600), max_attempts=2, retry_delay=30
    )
    first = services.schedule_run_now(schedule=schedule)
    dispatch.execute_run.call(first.pk)
    first.refresh_from_db()
    assert first.status == RunStatus.FAILED
    retry = Run.objects.get(attempt=2)
    assert (retry.status, retry.dispatch) == (RunStatus.QUEUED, "enqueue")
    # The worker recorded the outcome and enqueued the retry on its own database thread,
    # where its backend instance lives (backends are per thread).
    runtime = worker_runtime()
    (later,) = runtime._call(runtime.scheduler.db(lambda: list(task_backends["pool"].results)))
    assert later.args == [retry.pk]
    assert (later.task.queue_name, later.task.priority) == ("reports", -5)
    assert (later.task.run_after - retry.queued_at).total_seconds() >= 29


@pytest.mark.django_db
def test_an_operator_may_keep_a_django_tasks_runs_in_the_scheduler(pool) -> None:
    schedule = make_schedule("inline-report", "test.django_report", every(3600), dispatch="inline")
    run = services.schedule_run_now(schedule=schedule)
    assert run.dispatch == "inline"
    assert pool.results == []  # the scheduler claims it like any queued run


@pytest.mark.django_db
def test_a_django_task_that_takes_its_context_is_reported(clean_registry) -> None:
    schedules.schedule(django_jobs.with_context, name="test.with_context")
    assert any("takes_context" in p for p in registry.declarations["test.with_context"][0].problems)
    with pytest.raises(SystemCheckError, match="schedules.W002.*takes_context"):
        call_command("check", fail_level="WARNING")


@pytest.mark.django_db
def test_a_backend_that_cannot_defer_is_reported(clean_registry) -> None:
    schedules.schedule(django_jobs.immediate, name="test.immediate")
    (problem,) = registry.declarations["test.immediate"][0].problems
    assert "cannot defer tasks (run_after)" in problem
    schedules.schedule(django_jobs.immediate, name="test.immediate_inline", dispatch="inline")
    assert registry.declarations["test.immediate_inline"][0].problems == []
