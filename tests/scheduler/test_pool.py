"""The worker pool with real worker processes: every way a task can end, and every stop.

These tests are about processes, so they start real ones; none waits on a slot.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from schedules.scheduler import pool as pool_module
from schedules.scheduler.pool import PoolLimits, WorkerDied, WorkerPool
from tests.factories import alive


@pytest.fixture
async def pool():
    pools: list[WorkerPool] = []

    def make(**limits) -> WorkerPool:
        made = WorkerPool(
            PoolLimits(**{"min_workers": 0, "kill_grace": 0.5, "backlog": 0, **limits})
        )
        pools.append(made)
        return made

    yield make
    for made in pools:
        await made.close()


async def run(pool: WorkerPool, task: str, **kwargs) -> dict:
    return await pool.run(task, kwargs, result_limit=10_000)


async def test_a_run_executes_in_a_worker_process_not_the_scheduler(pool) -> None:
    workers = pool()
    reply = await run(workers, "test.pid")
    assert reply["ok"]
    assert reply["result"] != os.getpid()
    assert reply["result"] in workers.pids()


async def test_a_workers_collections_leave_django_alone(pool) -> None:
    """Django and the apps, set up before any run, are frozen out of the collector: a
    full collection walked all of them (70 to 90 ms, a run sent meanwhile waited)."""
    reply = await run(pool(), "test.gc_view")
    assert reply["ok"], reply
    view = reply["result"]
    assert view["frozen"] > 10_000, view  # Django's modules, models, settings, ...
    assert view["walked"] < view["frozen"], view


@pytest.mark.parametrize(
    ("task", "error"),
    [
        ("test.sys_exit", "SystemExit: the task called sys.exit(3)"),
        ("test.keyboard_interrupt", "KeyboardInterrupt"),
        ("test.base_exception", "TaskEscape: escaped"),
        ("test.fail", "RuntimeError: boom"),
    ],
)
async def test_any_exception_fails_only_the_run_and_the_worker_serves_the_next(
    pool, task, error
) -> None:
    workers = pool()
    first = (await run(workers, "test.pid"))["result"]
    reply = await run(workers, task)
    assert reply["ok"] is False
    assert reply["error"] == error
    assert "Traceback" in reply["traceback"]
    assert (await run(workers, "test.pid"))["result"] == first


@pytest.mark.parametrize(
    ("task", "reason"),
    [
        ("test.os_exit", "the worker process exited with code 7"),
        ("test.segfault", "the worker process was killed by SIGSEGV"),
    ],
)
async def test_a_worker_that_dies_fails_its_run_with_the_reason_and_is_replaced(
    pool, task, reason
) -> None:
    workers = pool()
    first = (await run(workers, "test.pid"))["result"]
    with pytest.raises(WorkerDied, match=reason):
        await run(workers, task)
    assert not alive(first)
    second = (await run(workers, "test.pid"))["result"]
    assert second != first


@pytest.mark.parametrize("reported", [True, False], ids=["death-reported", "not-yet-reported"])
async def test_an_idle_worker_killed_from_outside_fails_no_run(pool, monkeypatch, reported) -> None:
    workers = pool()
    first = (await run(workers, "test.pid"))["result"]
    (idle,) = [worker.process for worker in workers._idle if worker.process.pid == first]
    os.kill(first, signal.SIGKILL)  # the OOM killer, an operator's kill -9
    while pool_module._alive(idle):
        await asyncio.sleep(0.01)  # gone: reaped by the fork server, its socket closed
    if not reported:
        # The fork server reports a death a moment after it reaps the process: until
        # then the worker looks alive, and the run is sent to a closed socket.
        monkeypatch.setattr(pool_module, "_alive", lambda process: True)
    reply = await run(workers, "test.pid")
    assert reply["ok"]  # the run went to a new worker
    assert reply["result"] != first


async def test_a_worker_killed_as_a_run_reaches_it_passes_the_run_on(pool) -> None:
    """The run is in the worker's socket, unread, when the worker dies (a process
    whose last thread is still exiting keeps its socket open after the kill)."""
    workers = pool(max_workers=1)
    first = (await run(workers, "test.pid"))["result"]
    os.kill(first, signal.SIGSTOP)  # alive, but reads nothing
    running = asyncio.ensure_future(run(workers, "test.pid"))
    while not workers.busy_pids():
        await asyncio.sleep(0.01)
    assert workers.busy_pids() == [first]
    await asyncio.sleep(0.1)  # the run is sent, and waits unread
    assert not running.done()
    os.kill(first, signal.SIGKILL)
    reply = await running
    assert reply["ok"]  # the run went to a new worker, once
    assert reply["result"] != first
    assert not alive(first)


async def test_a_worker_that_read_its_run_and_died_is_the_runs_failure(pool, tmp_path) -> None:
    """Once read, a run may have begun: it is never sent to a second worker."""
    workers = pool(max_workers=1)
    first = (await run(workers, "test.pid"))["result"]
    running = asyncio.ensure_future(run(workers, "test.hold", marker_dir=str(tmp_path), seconds=30))
    for _ in range(2000):  # 20 s at most: until the body is executing
        if (tmp_path / f"{first}.start").exists():
            break
        await asyncio.sleep(0.01)
    assert (tmp_path / f"{first}.start").exists(), "the body never started"
    os.kill(first, signal.SIGKILL)
    with pytest.raises(WorkerDied, match="SIGKILL"):
        await running
    assert workers.busy_pids() == []


async def cancel_after_start(workers: WorkerPool, task: str, **kwargs) -> tuple[int, float]:
    """Start a run, cancel it once it executes; (its worker's pid, seconds the stop took)."""
    await run(workers, "test.pid")  # a worker that is set up, so the body starts at once
    running = asyncio.ensure_future(run(workers, task, **kwargs))
    await asyncio.sleep(0.3)  # the body is executing now
    (pid,) = workers.busy_pids()
    began = time.monotonic()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    return pid, time.monotonic() - began


async def test_cancelling_a_run_stops_its_worker_process_at_once(pool) -> None:
    workers = pool()
    pid, took = await cancel_after_start(workers, "test.sleep", seconds=30)
    assert not alive(pid)
    assert took < 0.5  # SIGTERM ends it; no kill grace needed
    assert pid not in workers.pids()


async def test_a_worker_that_ignores_sigterm_is_killed_after_the_grace(pool) -> None:
    workers = pool(kill_grace=0.5)
    pid, took = await cancel_after_start(workers, "test.stubborn", seconds=30)
    assert not alive(pid)
    assert 0.5 <= took < 2.0


async def test_stopping_a_run_stops_the_processes_its_task_started(pool, tmp_path) -> None:
    """A shell-out's process outlived the worker, re-parented to init, and ran on."""
    workers = pool()
    pid_file = tmp_path / "child.pid"
    run_task = asyncio.create_task(run(workers, "test.spawn_child", pid_file=str(pid_file)))
    while not pid_file.exists() or not pid_file.read_text():
        await asyncio.sleep(0.02)
    spawned = int(pid_file.read_text())
    assert alive(spawned)

    run_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run_task

    deadline = time.monotonic() + 2
    while alive(spawned) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    try:
        assert not alive(spawned)
    finally:  # not left behind by a failure
        if alive(spawned):
            os.kill(spawned, signal.SIGKILL)


async def test_the_pool_grows_on_demand_to_its_maximum_then_runs_wait(pool, tmp_path) -> None:
    workers = pool(max_workers=2)
    assert workers.size == 0
    held = [
        asyncio.ensure_future(run(workers, "test.hold", marker_dir=str(tmp_path), seconds=30))
        for _ in range(3)
    ]
    for _ in range(500):
        if len(list(tmp_path.glob("*.start"))) == 2:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)
    assert len(list(tmp_path.glob("*.start"))) == 2  # the third waits for a worker
    assert (workers.size, workers.busy, workers.waiting) == (2, 2, 1)
    held[0].cancel()
    for _ in range(500):
        if len(list(tmp_path.glob("*.start"))) == 3:
            break
        await asyncio.sleep(0.01)
    assert len(list(tmp_path.glob("*.start"))) == 3
    for task in held[1:]:
        task.cancel()
    await asyncio.gather(*held, return_exceptions=True)


async def test_runs_waiting_for_a_worker_get_one_by_priority_then_arrival(pool) -> None:
    workers = pool(max_workers=1)
    busy = await workers.acquire()
    order: list[str] = []

    async def wait(name: str, priority: int) -> None:
        worker = await workers.acquire(priority)
        order.append(name)
        workers.release(worker)

    waiting = []
    for name, priority in [("normal", 0), ("critical", 10), ("normal-later", 0), ("high", 5)]:
        waiting.append(asyncio.ensure_future(wait(name, priority)))
        await asyncio.sleep(0)  # each joins the line in this order
    assert workers.waiting == 4
    waiting[2].cancel()  # a waiter that leaves the line loses its place, not the others'
    workers.release(busy)
    await asyncio.gather(*waiting, return_exceptions=True)
    assert order == ["critical", "high", "normal"]


async def test_workers_are_recycled_after_their_maximum_number_of_runs(pool) -> None:
    workers = pool(max_runs=2)
    pids = [(await run(workers, "test.pid"))["result"] for _ in range(3)]
    assert pids[0] == pids[1] != pids[2]


async def test_a_worker_over_the_memory_limit_is_recycled_after_its_run(pool) -> None:
    workers = pool(max_memory_mb=1)  # every worker is over 1 MB
    pids = [(await run(workers, "test.pid"))["result"] for _ in range(2)]
    assert pids[0] != pids[1]


async def test_idle_workers_beyond_the_minimum_are_stopped(pool, tmp_path) -> None:
    workers = pool(min_workers=1, max_workers=3, idle_timeout=0)
    await workers.start()
    assert workers.size == 1
    await asyncio.gather(*(run(workers, "test.sleep", seconds=0.3) for _ in range(3)))
    assert workers.size == 3  # never more than the maximum, spares included
    assert workers.trim() == 2
    assert workers.size == 1


def test_a_worker_whose_pool_stopped_while_it_started_ends_quietly(monkeypatch, capfd) -> None:
    """A scheduler shut down while a worker was setting Django up: the worker's "ready"
    met a closed pipe and printed a BrokenPipeError traceback (seen at a test run's end)."""
    from multiprocessing import Pipe

    from schedules.scheduler import child

    monkeypatch.setattr(child, "_setup_django", lambda databases: None)
    pool_end, worker_end = Pipe()
    pool_end.close()
    child.main(worker_end, {})  # returns: nothing to serve
    assert "Traceback" not in capfd.readouterr().err
