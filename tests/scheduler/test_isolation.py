"""Run isolation in the scheduler: worker processes stop for real, and no task ends the loop.

The loop runs on the fake clock; where the behaviour is about worker processes,
the scheduler has a real pool (timeouts and stops are real, so they take
fractions of a real second).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError

from schedules import services
from schedules.conf import setting_problems
from schedules.models import Run, RunStatus
from schedules.registry import registry
from schedules.scheduler import hints
from schedules.scheduler.engine import CANCEL_CHECK_INTERVAL
from tests.factories import alive, create, every, runs_of


async def wait_for(predicate, *, seconds: float = 20.0) -> None:
    """Poll a condition on real processes (markers, pids), never a slot."""
    for _ in range(int(seconds / 0.02)):
        if await sync_to_async(predicate)():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met")


def started(folder: Path) -> list[int]:
    return sorted(int(p.stem) for p in folder.glob("*.start"))


@pytest.mark.parametrize("task", ["test.inline_exit", "test.inline_async_exit"])
async def test_an_inline_task_that_raises_systemexit_fails_only_its_run(
    scheduler, clock, task
) -> None:
    await create("escape", task, every(60))
    await create("bystander", "test.echo", every(60))
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("escape")
    assert run.status == RunStatus.FAILED
    assert run.error.startswith(("SystemExit", "KeyboardInterrupt"))
    assert [r.status for r in await runs_of("bystander")] == [RunStatus.SUCCEEDED]
    clock.advance(60)
    await scheduler.run_pass()  # the loop goes on
    await scheduler.wait_idle()
    assert len(await runs_of("bystander")) == 2


@pytest.mark.parametrize(
    ("task", "error"),
    [
        ("test.sys_exit", "SystemExit: the task called sys.exit(3)"),
        ("test.keyboard_interrupt", "KeyboardInterrupt"),
        ("test.base_exception", "TaskEscape: escaped"),
        ("test.os_exit", "the worker process exited with code 7 (os._exit in the task?)"),
        ("test.segfault", "the worker process was killed by SIGSEGV"),
    ],
)
async def test_any_way_a_task_dies_fails_its_run_with_the_reason_and_retries_apply(
    pooled, clock, task, error
) -> None:
    await create("dies", task, every(60), max_attempts=2, retry_delay=1)
    clock.advance(60)
    await pooled.run_pass()
    await pooled.wait_idle()
    (run, retry) = await runs_of("dies")
    assert (run.status, run.error) == (RunStatus.FAILED, error)
    assert (retry.status, retry.reason, retry.attempt) == (RunStatus.QUEUED, "retry", 2)


async def test_a_run_past_its_timeout_is_stopped_with_its_worker(pooled, clock, tmp_path) -> None:
    await create("hung", "test.hold", every(60), timeout=1, kwargs={"marker_dir": str(tmp_path)})
    clock.advance(60)
    await pooled.run_pass()
    await pooled.wait_idle()
    (run,) = await runs_of("hung")
    assert (run.status, run.error) == (RunStatus.TIMED_OUT, "timed out after 1s")
    (pid,) = started(tmp_path)
    assert not alive(pid)
    assert not list(tmp_path.glob("*.end"))
    # Its instance is free again: the next slot runs instead of being skipped.
    clock.advance(60)
    await pooled.run_pass()
    assert [r.status for r in await runs_of("hung")] == [RunStatus.TIMED_OUT, RunStatus.RUNNING]


async def test_a_task_without_a_timeout_gets_the_default_and_zero_opts_out(
    pooled, clock, settings
) -> None:
    settings.SILLO_DEFAULT_TIMEOUT = 0.5
    await create("defaulted", "test.sleep", every(60), kwargs={"seconds": 30})
    await create("unbounded", "test.sleep", every(60), kwargs={"seconds": 0.8}, timeout=0)
    clock.advance(60)
    await pooled.run_pass()
    await pooled.wait_idle()
    (defaulted,) = await runs_of("defaulted")
    (unbounded,) = await runs_of("unbounded")
    assert (defaulted.status, defaulted.error) == (RunStatus.TIMED_OUT, "timed out after 0.5s")
    assert unbounded.status == RunStatus.SUCCEEDED


async def test_runs_beyond_the_free_workers_wait_queued_and_start_as_workers_free(
    pooled, clock, tmp_path
) -> None:
    kwargs = {"marker_dir": str(tmp_path), "seconds": 30}
    for code in ("a", "b", "c"):
        await create(code, "test.hold", every(60), kwargs=kwargs)
    clock.advance(60)
    await pooled.run_pass()
    statuses = {code: [r.status for r in await runs_of(code)] for code in ("a", "b", "c")}
    assert sorted(s for (s,) in statuses.values()) == ["queued", "running", "running"]
    (waiting,) = [code for code, (s,) in statuses.items() if s == "queued"]
    # Nothing else is due, and the queued run waits for a worker: the loop sleeps, no spin.
    assert await pooled._sleep_after_pass() > 0
    await wait_for(lambda: len(started(tmp_path)) == 2)
    running = await sync_to_async(lambda: list(Run.objects.running()))()
    await sync_to_async(services.run_cancel)(run=running[0], by="tester")
    clock.advance(CANCEL_CHECK_INTERVAL)
    await pooled.run_pass()  # notices the cancel, stops that worker
    await pooled.run_pass()  # a worker is free: the queued run starts
    (run,) = await runs_of(waiting)
    assert run.status == RunStatus.RUNNING
    await wait_for(lambda: len(started(tmp_path)) == 3)


async def test_a_launched_run_counts_against_the_workers_before_it_holds_one(
    pooled, clock, tmp_path
) -> None:
    kwargs = {"marker_dir": str(tmp_path), "seconds": 30}
    for code in ("a", "b"):
        await create(code, "test.hold", every(60), kwargs=kwargs)
    late = await create("c", "test.hold", every(3600), kwargs=kwargs)
    clock.advance(60)
    await pooled.run_pass()  # a and b launched: their worker processes are still starting
    assert pooled._worker_slots().free == 0
    await sync_to_async(services.schedule_run_now)(schedule=late, by="tester")
    await pooled.run_pass()
    assert [r.status for r in await runs_of("c")] == [RunStatus.QUEUED]
    await wait_for(lambda: len(started(tmp_path)) == 2)


async def test_an_operator_cancel_stops_the_worker_and_keeps_who(pooled, clock, tmp_path) -> None:
    await create("long", "test.hold", every(60), kwargs={"marker_dir": str(tmp_path)})
    clock.advance(60)
    await pooled.run_pass()
    await wait_for(lambda: len(started(tmp_path)) == 1)
    (run,) = await runs_of("long")
    await sync_to_async(services.run_cancel)(run=run, by="alice")
    hints.wake_local()  # the cancel's wake-up, as runscheduler's listener hears it
    await pooled.run_pass()
    await pooled.wait_idle()
    (pid,) = started(tmp_path)
    assert not alive(pid)
    (run,) = await runs_of("long")
    assert (run.status, run.cancelled_by, run.error) == (
        RunStatus.CANCELLED,
        "alice",
        "cancelled by alice",
    )
    with pytest.raises(services.CancelRefused, match="already ended"):
        await sync_to_async(services.run_cancel)(run=run, by="alice")


async def test_replace_stops_the_old_run_before_the_new_one_executes(
    pooled, clock, tmp_path
) -> None:
    kwargs = {"marker_dir": str(tmp_path)}
    await create("swap", "test.hold", every(60), overlap="replace", kwargs=kwargs)
    clock.advance(60)
    await pooled.run_pass()
    await wait_for(lambda: len(started(tmp_path)) == 1)
    (first,) = started(tmp_path)
    clock.advance(60)
    await pooled.run_pass()
    assert not alive(first)  # stopped before the pass launched the replacement
    await wait_for(lambda: len(started(tmp_path)) == 2)
    statuses = [r.status for r in await runs_of("swap")]
    assert statuses == [RunStatus.CANCELLED, RunStatus.RUNNING]


async def test_shutdown_stops_hung_runs_and_records_them(pooled, clock, tmp_path, settings) -> None:
    settings.SILLO_SHUTDOWN_GRACE = 0.2
    await create("stuck", "test.hold", every(60), kwargs={"marker_dir": str(tmp_path)})
    clock.advance(60)
    await pooled.run_pass()
    await wait_for(lambda: len(started(tmp_path)) == 1)
    await pooled.shutdown()
    (pid,) = started(tmp_path)
    assert not alive(pid)
    (run,) = await runs_of("stuck")
    assert (run.status, run.error) == (RunStatus.CANCELLED, "scheduler shut down")


def test_pool_settings_out_of_range_are_refused_at_start_naming_the_setting(settings) -> None:
    settings.SILLO_MAX_WORKERS = 0
    assert setting_problems() == ["SILLO_MAX_WORKERS must be from 1 to 1024, got 0"]
    with pytest.raises(CommandError, match="SILLO_MAX_WORKERS must be from 1 to 1024, got 0"):
        call_command("runscheduler", "--once")
    settings.SILLO_MAX_WORKERS = 2
    settings.SILLO_MIN_WORKERS = 3
    assert setting_problems() == ["SILLO_MIN_WORKERS must not exceed SILLO_MAX_WORKERS (3 > 2)"]


def test_a_task_a_worker_cannot_import_is_reported_by_check(db) -> None:
    from django.core.checks import run_checks

    from schedules.registry import task

    saved = dict(registry.declarations)
    try:

        @task("test.closure")
        def closure() -> None: ...

        messages = [m for m in run_checks() if m.id == "schedules.W005"]
        assert len(messages) == 1
        assert "defined inside a function" in messages[0].msg
    finally:
        registry.declarations.clear()
        registry.declarations.update(saved)
