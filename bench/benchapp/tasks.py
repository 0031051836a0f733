"""Benchmark tasks that run in worker processes: they note when their body started.

A worker cannot append to the benchmark's own list, so each execution appends
one line ("<code> <epoch seconds>") to SILLO_BENCH_EXECUTIONS; short appends
to one file are atomic, so concurrent workers never interleave a line.
"""

from __future__ import annotations

import os
import time

import schedules


def _note(code: str) -> None:
    path = os.environ.get("SILLO_BENCH_EXECUTIONS")
    if path:
        with open(path, "a") as log:
            log.write(f"{code} {time.time()}\n")


@schedules.task("bench.noop_worker")
def noop_worker(code: str = "") -> None:
    _note(code)


@schedules.task("bench.noop_sync")
def noop_sync() -> None:
    """Nothing: the per-run cost of the machinery around a task."""


@schedules.task("bench.noop_async")
async def noop_async() -> None:
    """Nothing, as a coroutine."""


@schedules.task("bench.hold_worker")
def hold_worker(code: str = "", seconds: float = 4.0) -> None:
    """A run long enough to be in flight when its scheduler is killed: notes its start as
    `code`, and `code.end` if its body is still executing `seconds` later."""
    _note(code)
    time.sleep(seconds)
    _note(f"{code}.end")
