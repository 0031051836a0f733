"""Shared fixtures and hooks: the repository root, a way to run manage.py for real, and a
watch that ends a hung test run with its evidence (pending asyncio tasks, every stack)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Seconds before pytest-timeout ends a hung run at which its pending asyncio tasks are
# printed: the thread stacks it prints then show only an event loop waiting, not on what.
TASK_DUMP_LEAD = 20.0
# pytest-timeout cancels its timer once a test has failed, so a teardown that then hangs
# (a scheduler's shutdown waiting on a slot the failed test never reached) would hold CI
# to its limit: this much after the timeout, the watch below ends the run as it would.
BACKSTOP = 30.0
_watched = pytest.StashKey[threading.Event]()


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # a pytest-xdist worker (make test runs two)
        import pytest_timeout

        pytest_timeout.timeout_timer = _timeout_to_stderr(pytest_timeout.timeout_timer)


def _timeout_to_stderr(timeout_timer):
    """A worker's stdout is /dev/null (execnet keeps the real one for its channel), and
    pytest-timeout writes a hung test's stacks to stdout: they would be lost with the
    worker. Stdout goes to stderr first, once the capture that restores it is suspended."""

    def dump_to_stderr(item: pytest.Item, settings) -> None:
        capture = item.config.pluginmanager.getplugin("capturemanager")
        if capture:
            capture.suspend_global_capture(item)
        os.dup2(2, 1)
        timeout_timer(item, settings)

    return dump_to_stderr


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings) -> None:
    if settings.timeout and settings.timeout > TASK_DUMP_LEAD and settings.method == "thread":
        done = item.stash[_watched] = threading.Event()
        threading.Thread(target=_watch, args=(item, settings, done), daemon=True).start()
    # None: pytest-timeout's own timer is set as well.


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    yield  # setup, call and teardown
    done = item.stash.get(_watched, None)
    if done is not None:
        done.set()


def _watch(item: pytest.Item, settings, done: threading.Event) -> None:
    if done.wait(settings.timeout - TASK_DUMP_LEAD):
        return
    _print_pending_tasks(item)
    if not done.wait(TASK_DUMP_LEAD + BACKSTOP):
        from pytest_timeout import timeout_timer

        timeout_timer(item, settings)  # captured output, every thread's stack, exit 1


def _print_pending_tasks(item: pytest.Item) -> None:
    out = sys.__stderr__
    out.write(f"\n+++ pending asyncio tasks of {item.nodeid}, each where it waits +++\n")
    for task in [obj for obj in gc.get_objects() if isinstance(obj, asyncio.Task)]:
        if not task.done():
            out.write(f"{task!r}\n")
            for frame in task.get_stack():
                out.write("".join(traceback.format_stack(frame, limit=1)))
    out.flush()


def child_environment() -> dict[str, str]:
    """The environment for the product's own processes, without Django's async-safety
    escape hatch should the developer's shell set it: the product must never run with it."""
    env = dict(os.environ)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return env


def run_manage(
    data: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`manage.py ARGS` in a child process on the SQLite database of the data folder `data`."""
    child_env = {**child_environment(), "SILLO_DATA_DIR": str(data), **(env or {})}
    child_env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        capture_output=True,
        text=True,
        env=child_env,
        timeout=120,
    )


@pytest.fixture
def manage(tmp_path: Path):
    """Run `manage.py ...` in a child process with its own data folder."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return run_manage(tmp_path / "data", *args, env=env)

    return run


@pytest.fixture(autouse=True)
def _plain_static_storage(settings) -> None:
    """Templates resolve static URLs without a collectstatic manifest in tests."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture(autouse=True)
def _channel_layer_answers(monkeypatch) -> None:
    """A test that hung the channel layer leaves no quiet period to the next one, nor
    refusals held back from the log, nor listeners: the in-process layer sends only to
    groups with a member."""
    from schedules import layer as layer_module  # settings are set up

    monkeypatch.setattr("schedules.layer._quiet_until", 0.0)
    monkeypatch.setattr("schedules.layer.refusals", layer_module.refusals.__class__())
    from channels.layers import InMemoryChannelLayer, get_channel_layer  # settings are set up

    layer = get_channel_layer()
    if isinstance(layer, InMemoryChannelLayer):
        monkeypatch.setattr(layer, "groups", {})
        monkeypatch.setattr(layer, "channels", {})
    else:
        # Redis: a layer's receive locks belong to the event loop that took them. A
        # receive cancelled as a test's loop ended (a socket closed, a wait timed out)
        # leaves its lock held by a cleanup that never ran, and every later receive of
        # the process failed on "bound to a different event loop". A long-lived server
        # has one loop; a test run has one per test, so each test gets its own layer.
        from channels import DEFAULT_CHANNEL_LAYER
        from channels.layers import channel_layers

        channel_layers.backends.pop(DEFAULT_CHANNEL_LAYER, None)


@pytest.fixture
def every_group_listened(monkeypatch):
    """The in-process channel layer, with a page open on every group: a send to a group
    nobody listens to is not made at all (schedules.layer.listened), so a test of what
    a send meets (a hung or broken layer) needs a listener."""
    from channels.layers import InMemoryChannelLayer, get_channel_layer  # settings are set up

    class EveryGroup(dict):
        def __contains__(self, group: object) -> bool:
            return True

        def __missing__(self, group: str) -> dict:
            return {}  # a listener that receives nothing: a send reaches no channel

    layer = get_channel_layer()
    if isinstance(layer, InMemoryChannelLayer):  # Redis: every group is sent to anyway
        monkeypatch.setattr(layer, "groups", EveryGroup())
    return layer


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI, nothing may be skipped (a missing browser or server is a setup bug),
    and a run in which nothing passed is a failure, not a green build."""
    if os.environ.get("CI") != "true" or exitstatus != 0:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = reporter.stats if reporter else {}
    skipped = stats.get("skipped", [])
    if skipped or not stats.get("passed"):
        for report in skipped:
            reporter.write_line(
                f"CI=true and a test was skipped: {report.nodeid} {report.longrepr}"
            )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# Tests that touch no database and no channel layer: the production pass would
# repeat them unchanged, so they run once, in the SQLite pass.
PURE = (
    "tests/timing/",
    "tests/test_architecture.py",
    "tests/test_bench_report.py",
    "tests/test_harness.py",
)


def pytest_itemcollected(item: pytest.Item) -> None:
    path = str(item.path).replace("\\", "/")
    if any(part in path for part in PURE) and not item.get_closest_marker("django_db"):
        item.add_marker(pytest.mark.pure)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Browser tests last: Playwright's session keeps an event loop running in this
    thread from its first use on, and code under test may call asyncio.run()."""
    items.sort(key=lambda item: "tests/browser/" in str(item.path).replace("\\", "/"))
