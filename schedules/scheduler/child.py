"""The worker process: Django set up once, then one run at a time from its pipe.

The scheduler sends `(task_name, kwargs, result_limit, capture_level)`; the
worker runs the task and sends back a reply dict, preceded by `{"output": text}`
messages while the run prints or logs (capture.py). Anything the task does,
`SystemExit`, `KeyboardInterrupt` or any other `BaseException` included, becomes
a failed reply: only the worker's own death (os._exit, a signal, the OOM
killer) ends it, and the pool turns that into the run's failure. Runs are
never interleaved: a worker has one run at a time, so stopping a run is
stopping its worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import json
import os
import resource
import select
import signal
import sys
import threading
import traceback
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from ..storable import needs_cleaning, storable_json, storable_text
from .capture import PipeWriter, capturing_in_worker


def _tell_pool(conn: Connection, message: dict) -> bool:
    """Send the pool how the start went; False if the pool is gone (its scheduler shut
    down while this worker set Django up): nothing to serve, and nothing to print."""
    try:
        conn.send(message)
    except (BrokenPipeError, ConnectionResetError, EOFError):
        return False
    return True


def main(conn: Connection, databases: dict[str, Any]) -> None:
    """The worker's life: set up, then serve runs until the pipe says stop or closes."""
    # Stopping a run sends SIGTERM: let it end the process at once, whatever the
    # parent's handlers were; SIGINT (Ctrl-C at a terminal) is the scheduler's to handle.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A process group of its own: stopping a run stops what its task started too (a
    # subprocess, a shell pipeline), not only this worker (pool._signal_group).
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    try:
        _setup_django(databases)
    except BaseException:  # noqa: BLE001  the pool reports why the worker could not start
        _tell_pool(conn, {"ready": False, "error": traceback.format_exc(limit=-3)})
        return
    if not _tell_pool(conn, {"ready": True}):
        return
    # Deferred until Django is set up: the registry is filled by app discovery.
    from django.db import close_old_connections

    from ..registry import registry

    # One event loop for the worker's life: a new one per async run costs more than the run.
    runner = asyncio.Runner()
    # The run's output is shipped from a thread as well: one send at a time on the pipe.
    send_lock = threading.Lock()
    writer = PipeWriter(conn, send_lock).start()
    running = threading.Event()
    threading.Thread(
        target=_end_with_the_scheduler, args=(conn, running), name="sillo-orphan-watch", daemon=True
    ).start()
    # Django, the apps and this worker's machinery last its life: frozen, the oldest
    # generation's collections skip them. Each of those collections walked all of them,
    # 70 to 90 ms in which a run sent here waited (a stall of every run's start at
    # 100 runs/s); now they walk what runs left behind. Also keeps forked pages shared.
    gc.freeze()
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            _leave()  # the scheduler is gone
        if request is None:
            _leave()  # retired, or the pool closes
        task_name, kwargs, result_limit, capture_level = request
        running.set()
        if capture_level is False:  # capture off (SILLO_OUTPUT_MAX_CHARS = 0)
            reply = _run(registry.get(task_name), task_name, kwargs, result_limit, runner)
        else:
            with capturing_in_worker(writer, capture_level):
                reply = _run(registry.get(task_name), task_name, kwargs, result_limit, runner)
        running.clear()
        close_old_connections()
        reply["peak_memory_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        try:
            with send_lock:
                conn.send(reply)
        except (BrokenPipeError, OSError):
            _leave()


def _leave() -> NoReturn:
    """End the worker now: a normal exit would first wait for any thread a run left
    behind (a task's non-daemon thread), and keep the process alive meanwhile."""
    # Here, as in _setup_django: importing this module (in the fork server) loads no Django.
    from django.db import connections

    connections.close_all()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _end_with_the_scheduler(conn: Connection, running: threading.Event) -> None:
    """End the worker if its scheduler ends while a run executes here.

    A scheduler killed outright (SIGKILL, the OOM killer) has its runs marked
    `interrupted` by its peers, which may retry them: a worker left executing
    the old attempt would run the slot twice, unseen. Nor does the worker end
    with the fork server, which every worker keeps alive. The scheduler never
    writes to a worker during a run, so the pipe closing is the sign; an idle
    worker leaves by its main loop, which reads the end.
    """
    watch = select.poll()
    watch.register(conn.fileno(), select.POLLHUP | getattr(select, "POLLRDHUP", 0))
    while not watch.poll():
        pass
    running.wait()  # a run executing, or one read just before the scheduler ended
    with contextlib.suppress(OSError):  # and what the run started (the group is ours)
        if os.getpgid(0) == os.getpid():
            os.killpg(0, signal.SIGKILL)
    os._exit(1)


def _setup_django(databases: dict[str, Any]) -> None:
    # Imported here so that importing this module (in the fork server) sets up nothing.
    import django
    from django.apps import apps
    from django.conf import settings

    if not apps.ready:
        # The parent's databases as configured now (a test run points them elsewhere).
        settings.DATABASES = databases
        django.setup()


def _run(
    declaration: Any, task_name: str, kwargs: dict, result_limit: int, runner: asyncio.Runner
) -> dict:
    if declaration is None:
        return {
            "ok": False,
            "error": f"task '{task_name}' is not declared in the worker process "
            "(declared in __main__ or inside a function? declare it at module level in tasks.py)",
            "traceback": "",
        }
    try:
        if inspect.iscoroutinefunction(declaration.func):
            result = runner.run(declaration.func(**kwargs))
        else:
            result = declaration.func(**kwargs)
    except BaseException as exc:  # noqa: BLE001  a task's SystemExit fails its run, not the worker
        return {"ok": False, "error": describe_exception(exc), "traceback": traceback.format_exc()}
    return {"ok": True, "result": jsonable(result, result_limit)}


def describe_exception(exc: BaseException) -> str:
    """'ValueError: bad input', never raising: a task's exception may fail to print
    (its __str__ raises), and that must fail its run, not the worker or the scheduler."""
    name = type(exc).__name__
    try:
        if isinstance(exc, SystemExit):
            return f"SystemExit: the task called sys.exit({exc.code!r})"
        text = str(exc)
    except Exception:  # noqa: BLE001
        return f"{name} (its message could not be printed)"
    return f"{name}: {text}" if text else name


def jsonable(result: Any, limit: int) -> Any:
    """The result as JSON, truncated to `limit` characters; repr() if it is not JSON.
    Strings are made storable (storable.py). Applied in the worker and again in the
    scheduler (where middleware may change the result): a result this made already
    is returned as it is, not wrapped a second time."""
    if _truncated(result, limit):
        return result
    try:
        text = json.dumps(result)
    except (TypeError, ValueError):
        result = repr(result)
        text = json.dumps(result)
    if needs_cleaning(text):
        result = storable_json(json.loads(text))
        text = json.dumps(result)
    if len(text) > limit:
        return {"truncated": True, "preview": text[:limit]}
    return result


def _truncated(result: Any, limit: int) -> bool:
    """Whether `result` is a cut this function made (a task returning the same shape
    passes only if it is as short and as storable)."""
    return (
        isinstance(result, dict)
        and result.keys() == {"truncated", "preview"}
        and result["truncated"] is True
        and isinstance(result["preview"], str)
        and len(result["preview"]) <= limit
        and storable_text(result["preview"]) is result["preview"]
    )


def exit_description(exitcode: int | None) -> str:
    """Why a worker process ended, in an operator's words."""
    if exitcode is None:
        return "the worker process ended"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (out of memory, or killed from outside?)" if name == "SIGKILL" else ""
        return f"the worker process was killed by {name}{hint}"
    return f"the worker process exited with code {exitcode} (os._exit in the task?)"


if os.name != "posix":  # pragma: no cover - the pool relies on fork/forkserver semantics
    raise ImportError("worker processes need a POSIX system")
