"""Tasks for the test suite, discovered like any app's tasks.py."""

from __future__ import annotations

import asyncio
import os
import threading
import time

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


@schedules.task("test.until_file")
def until_file(path: str) -> str:
    """Fails until `path` exists: end-to-end tests recover a failing schedule with it."""
    if not os.path.exists(path):
        raise RuntimeError(f"{path} is missing")
    return "found"
