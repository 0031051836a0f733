"""Rate limits: one bucket in the database for every process, per task or per schedule."""

from __future__ import annotations

from dataclasses import replace

import pytest
from asgiref.sync import sync_to_async

from schedules import ratelimit
from schedules.models import Run, RunStatus
from schedules.registry import Registry, registry
from schedules.scheduler import pipeline
from schedules.scheduler.engine import Scheduler
from tests.factories import FakeClock, create, every, inline_executor, runs_of


def test_refill_is_continuous_and_capped() -> None:
    assert ratelimit.refill(0.0, 30, rate=2, per=60) == 1.0
    assert ratelimit.refill(1.5, 600, rate=2, per=60) == 2.0
    assert ratelimit.refill(1.0, -5, rate=2, per=60) == 1.0  # a clock stepping back adds nothing
    assert ratelimit.wait_for_token(0.25, rate=2, per=60) == 22.5


def limited(rate: int, per: float, **options) -> Registry:
    tasks = Registry()
    tasks.declarations = dict(registry.declarations)
    declaration = registry.get("test.echo")
    tasks.declarations["test.echo"] = [
        replace(declaration, middleware=(pipeline.rate_limit(rate, per=per, **options),))
    ]
    return tasks


async def test_several_schedulers_share_one_bucket(transactional_db) -> None:
    """Two processes with a limit of 2 a minute run 2 between them, not 4."""
    ticks = {"now": 1000.0}
    tasks = limited(2, 60, clock=lambda: ticks["now"])
    clocks = [FakeClock(), FakeClock()]
    schedulers = [
        Scheduler(clock=clock, tasks=tasks, executor=inline_executor()) for clock in clocks
    ]
    for scheduler in schedulers:
        await scheduler.start()
    try:
        for code in ("a", "b", "c", "d"):
            await create(code, "test.echo", every(60))
        for clock, scheduler in zip(clocks, schedulers, strict=True):
            clock.advance(60)
            await scheduler.run_pass()
            await scheduler.wait_idle()
    finally:
        for scheduler in schedulers:
            await scheduler.shutdown()
    statuses = await sync_to_async(lambda: list(Run.objects.values_list("status", flat=True)))()
    assert sorted(statuses) == ["skipped", "skipped", "succeeded", "succeeded"]


async def test_a_schedule_limit_in_wait_mode_puts_the_run_back_in_the_queue(
    scheduler, clock
) -> None:
    await create("gentle", "test.echo", every(10), rate_limit=1, rate_period=60, rate_mode="wait")
    clock.advance(10)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    clock.advance(10)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    first, second = await runs_of("gentle")
    assert first.status == RunStatus.SUCCEEDED
    assert second.status == RunStatus.QUEUED
    assert second.error.startswith("rate limit: waiting")
    assert second.not_before > clock.now()


@pytest.mark.parametrize("rate", [0, -1])
def test_a_bad_limit_is_refused_when_declared(rate) -> None:
    with pytest.raises(ValueError, match="rate >= 1"):
        pipeline.rate_limit(rate)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"rate_limit": 1, "rate_period": 0}, "rate_period"),
        ({"rate_limit": 1, "rate_period": -5}, "rate_period"),
        ({"rate_limit": 0}, "rate_limit"),
        ({"rate_limit": -3}, "rate_limit"),
        ({"rate_mode": "later"}, "rate_mode"),
    ],
)
def test_an_operator_cannot_ask_for_a_limit_that_cannot_work(options, field) -> None:
    """Period 0 failed every run after the first (ZeroDivisionError); a negative period
    or limit switched the limit off without a word."""
    from schedules.inputs import option_problems

    assert field in option_problems(options)
    assert option_problems({"rate_limit": None, "rate_period": 0.5, "rate_mode": "wait"}) == {}


@pytest.mark.parametrize(("limit", "period"), [(1, 0.0), (1, -5.0)])
async def test_a_stored_limit_that_cannot_work_fails_the_run_saying_so(
    scheduler, clock, limit, period
) -> None:
    """A record edited by hand past the checks: its runs fail with the reason, and the
    scheduler carries on."""
    from schedules.models import Schedule

    schedule = await create("odd", "test.echo", every(10), rate_limit=2, rate_period=60)
    await Schedule.objects.filter(pk=schedule.pk).aupdate(rate_limit=limit, rate_period=period)
    clock.advance(10)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("odd")
    assert run.status == RunStatus.FAILED
    assert "rate limit cannot apply" in run.error and "fix the schedule" in run.error
