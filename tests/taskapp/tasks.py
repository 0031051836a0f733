"""Tasks for the test suite, discovered like any app's tasks.py."""

from __future__ import annotations

import asyncio
import threading
import time

from django.tasks import task as django_task

import schedules

# Tests open these gates to let blocked tasks finish.
sync_gate = threading.Event()
async_gates: dict[str, asyncio.Event] = {}


@schedules.task("test.echo")
def echo(**kwargs: object) -> dict:
    return kwargs


@schedules.task("test.echo_async")
async def echo_async(**kwargs: object) -> dict:
    return kwargs


@schedules.task("test.fail")
def fail(message: str = "boom") -> None:
    raise RuntimeError(message)


@schedules.task("test.block_async")
async def block_async(gate: str = "default") -> str:
    await async_gates.setdefault(gate, asyncio.Event()).wait()
    return "released"


@schedules.task("test.block_sync")
def block_sync(limit: float = 30.0) -> str:
    sync_gate.wait(limit)
    return "released"


@schedules.task("test.sleep")
def sleep(seconds: float = 1.0) -> float:
    time.sleep(seconds)
    return seconds


@schedules.task("test.hang")
async def hang() -> None:
    await asyncio.Event().wait()


@schedules.task("test.every_hour", every=3600)
def every_hour() -> None:
    """Carries a code default."""


@schedules.task("test.twin")
def twin() -> None:
    """tests.dupapp declares this name again when it is installed (SILLO_EXTRA_APPS)."""


# Django tasks (django.tasks), scheduled as they are: their runs are enqueued on the
# task's own backend ("pool", a DummyBackend in tests.settings), queue and priority.
@schedules.task("test.django_report")
@django_task(backend="pool", queue_name="reports", priority=7)
def django_report(region: str = "eu") -> dict:
    return {"region": region, "via": "django.tasks"}


@django_task(backend="pool", queue_name="reports")
def django_cleanup(days: int = 30) -> int:
    return days


schedules.schedule(django_cleanup)  # named by its dotted path: tests.taskapp.tasks.django_cleanup


# A Django task on the database backend's "nightly" queue (db_worker in the production pass).
@schedules.task("test.django_db")
@django_task(queue_name="nightly", priority=3)
def django_db(note: str = "") -> str:
    return f"ran on a worker: {note}"
