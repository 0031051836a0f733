"""Tasks for the test suite, discovered like any app's tasks.py."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import signal
import sys
import threading
import time
from pathlib import Path

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


# ---- ways a task can die, and tasks that report where they ran (worker isolation tests)


class TaskEscape(BaseException):
    """A BaseException that is neither SystemExit nor KeyboardInterrupt."""


@schedules.task("test.sys_exit")
def sys_exit(code: int = 3) -> None:
    sys.exit(code)


@schedules.task("test.keyboard_interrupt")
def keyboard_interrupt() -> None:
    raise KeyboardInterrupt


@schedules.task("test.base_exception")
def base_exception() -> None:
    raise TaskEscape("escaped")


@schedules.task("test.os_exit")
def os_exit(code: int = 7) -> None:
    os._exit(code)


@schedules.task("test.segfault")
def segfault() -> None:
    ctypes.string_at(0)


@schedules.task("test.pid")
def pid() -> int:
    return os.getpid()


@schedules.task("test.gc_view")
def collector_view() -> dict:
    """Objects the garbage collector leaves alone (frozen) and the ones it walks."""
    return {"frozen": gc.get_freeze_count(), "walked": len(gc.get_objects())}


@schedules.task("test.gc_view_inline", isolation="inline")
def collector_view_inline() -> dict:
    """The same, in the scheduler's own process."""
    return collector_view()


@schedules.task("test.blocking_async")
async def blocking_async(seconds: float = 15.0) -> float:
    """The common mistake: a blocking call inside an async task."""
    time.sleep(seconds)
    return seconds


@schedules.task("test.hold")
def hold(marker_dir: str, seconds: float = 30.0) -> None:
    """Writes <pid>.start, sleeps, writes <pid>.end: tests read what really executed."""
    folder = Path(marker_dir)
    (folder / f"{os.getpid()}.start").write_text(str(time.time()))
    time.sleep(seconds)
    (folder / f"{os.getpid()}.end").write_text(str(time.time()))


@schedules.task("test.note")
def note(path: str, label: str, after: str = "") -> None:
    """Appends `label` to `path` (once `after` exists, if given): tests count what executed."""
    for _ in range(3000):
        if not after or os.path.exists(after):
            break
        time.sleep(0.01)
    with open(path, "a") as log:
        log.write(f"{label}\n")


@schedules.task("test.inline_exit", isolation="inline")
def inline_exit() -> None:
    raise SystemExit(4)


@schedules.task("test.inline_async_exit", isolation="inline")
async def inline_async_exit() -> None:
    raise KeyboardInterrupt


@schedules.task("test.stubborn")
def stubborn(seconds: float = 30.0) -> None:
    """Ignores SIGTERM, as some libraries' workers do: only SIGKILL stops it."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(seconds)


@schedules.task("test.until_file")
def until_file(path: str) -> str:
    """Fails until `path` exists: end-to-end tests recover a failing schedule with it."""
    if not os.path.exists(path):
        raise RuntimeError(f"{path} is missing")
    return "found"


# ---- output capture: what a run prints and logs


def _chatter(words: str, lines: int, size: int) -> None:
    import logging

    log = logging.getLogger("tests.chatty")
    print(f"hello {words}")
    print(f"to stderr {words}", file=sys.stderr)
    log.debug("debug is below the capture level")
    log.info("info %s", words)
    log.warning("warning %s", words)
    for number in range(lines):
        print(f"line {number} " + "x" * size)


@schedules.task("test.chatty")
def chatty(words: str = "there", lines: int = 0, size: int = 0, hold: float = 0.0) -> str:
    """Prints, writes to stderr and logs; then, with `hold`, keeps running (and printing)."""
    _chatter(words, lines, size)
    deadline = time.monotonic() + hold
    while time.monotonic() < deadline:
        print("still running", flush=True)
        time.sleep(0.1)
    return "said it"


@schedules.task("test.chatty_inline", isolation="inline")
def chatty_inline(words: str = "there", lines: int = 0, size: int = 0) -> str:
    _chatter(words, lines, size)
    return "said it"


@schedules.task("test.chatty_async", isolation="inline")
async def chatty_async(words: str = "there", gate: str = "") -> str:
    _chatter(words, 0, 0)
    if gate:
        await async_gates.setdefault(gate, asyncio.Event()).wait()
    print(f"bye {words}")
    return "said it"


@schedules.task("test.django_chatty")
@django_task(backend="pool", queue_name="reports")
def django_chatty(words: str = "there") -> str:
    _chatter(words, 0, 0)
    return "said it"


# What no database stores: a NUL (PostgreSQL) and a lone surrogate (Python's stand-in
# for an undecodable byte; neither database encodes it).
UNSTORABLE = "a\x00b \udcff c"


@schedules.task("test.unstorable")
def unstorable(where: str = "error") -> object:
    """Puts UNSTORABLE in its output, its error, or its result."""
    if where == "output":
        print(UNSTORABLE)
        return "printed"
    if where == "error":
        raise ValueError(UNSTORABLE)
    return {"text": UNSTORABLE, UNSTORABLE: [UNSTORABLE]}


@schedules.task("test.unstorable_inline", isolation="inline")
def unstorable_inline(where: str = "error") -> object:
    return unstorable(where)  # the decorator returns the function unchanged


@schedules.task("test.sleep_inline", isolation="inline")
def sleep_inline(seconds: float = 60.0) -> float:
    """A sync body in the scheduler's own thread pool: no one can stop it."""
    time.sleep(seconds)
    return seconds


@schedules.task("test.spawn_child")
def spawn_child(pid_file: str, seconds: float = 300.0) -> None:
    """Starts a process of its own (as a shell-out does), notes its pid, and waits."""
    import subprocess

    child = subprocess.Popen(["sleep", str(seconds)])
    with open(pid_file, "w") as note:
        note.write(str(child.pid))
    time.sleep(seconds)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


@schedules.task("test.unprintable")
def unprintable() -> None:
    """Raises an exception whose message cannot be printed."""
    raise Unprintable()
