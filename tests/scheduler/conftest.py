"""A scheduler driven by a fake clock: tests call passes, never wait for slots."""

from __future__ import annotations

import pytest

from schedules.registry import registry
from schedules.scheduler.engine import Scheduler
from schedules.scheduler.executor import Executor
from schedules.scheduler.pool import PoolLimits, WorkerPool
from tests.factories import FakeClock, inline_executor
from tests.taskapp import tasks as test_tasks


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def scheduler(clock: FakeClock, transactional_db):
    instance = Scheduler(clock=clock, tasks=registry, executor=inline_executor())
    await instance.start()
    yield instance
    for gate in test_tasks.async_gates.values():
        gate.set()
    test_tasks.sync_gate.set()
    if not instance._stopping:
        await instance.shutdown()
    test_tasks.async_gates.clear()
    test_tasks.sync_gate.clear()


async def pooled_scheduler(clock: FakeClock, workers: int, backlog: int = 0):
    """A started scheduler whose runs execute in a real pool of at most `workers`
    worker processes, with at most `backlog` runs waiting for one (not held); shut
    down when the test ends."""
    limits = PoolLimits(min_workers=0, max_workers=workers, kill_grace=0.5, backlog=backlog)
    pool = WorkerPool(limits)
    executor = Executor(pool=pool, sync_workers=workers)
    instance = Scheduler(clock=clock, tasks=registry, executor=executor)
    await instance.start()
    yield instance
    if not instance._stopping:
        await instance.shutdown()


@pytest.fixture
async def pooled(clock: FakeClock, transactional_db):
    """A scheduler whose runs execute in a real pool of at most two workers."""
    async for instance in pooled_scheduler(clock, 2):
        yield instance
