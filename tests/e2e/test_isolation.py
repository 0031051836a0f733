"""End-to-end run isolation: the real `runscheduler` and real tasks that misbehave.

What executed is read from the worker processes themselves (marker files with
their pids, and whether those pids still live), not only from the records.
"""

from __future__ import annotations

import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.factories import alive

from .conftest import free_port, rarely
from .test_runscheduler import parse

pytestmark = pytest.mark.slow

EVERY_SECOND = {"kind": "interval", "every": 1}


def run_now(site, *codes: str) -> None:
    """Queue a manual run of each schedule (a slot "soon" could pass while a busy
    machine is still starting the command that creates it)."""
    site.python(
        "from schedules import services; from schedules.models import Schedule\n"
        + "".join(
            f"services.schedule_run_now(schedule=Schedule.objects.get(code={code!r}))\n"
            for code in codes
        )
    )


def markers(site, name: str = "markers") -> Path:
    folder = site.folder / name
    folder.mkdir(exist_ok=True)
    return folder


def pids_started(folder: Path) -> list[int]:
    return sorted(int(p.stem) for p in folder.glob("*.start"))


def wait_until(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def get(url: str) -> tuple[int, float]:
    began = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            response.read()
            return response.status, time.monotonic() - began
    except urllib.error.HTTPError as exc:
        return exc.code, time.monotonic() - began


def serve(site) -> tuple[subprocess.Popen, str]:
    port = free_port()
    site.manage("collectstatic", "--noinput", "-v0")
    process = site.start("--serve", f"127.0.0.1:{port}")
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            get(f"{base}/health/")
            return process, base
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_any_way_a_task_dies_fails_only_its_run_and_the_server_keeps_serving(site) -> None:
    site.schedules(
        [
            ("exits", "test.sys_exit", rarely(), {}),
            ("interrupts", "test.keyboard_interrupt", rarely(), {}),
            ("escapes", "test.base_exception", rarely(), {}),
            ("os-exits", "test.os_exit", rarely(), {}),
            ("segfaults", "test.segfault", rarely(), {}),
            ("tick", "test.echo", EVERY_SECOND, {}),
        ]
    )
    process, base = serve(site)
    run_now(site, "exits", "interrupts", "escapes", "os-exits", "segfaults")
    site.wait_for(
        "SELECT count(*) FROM schedules_run WHERE schedule_code != 'tick' AND status = 'failed' "
        "HAVING count(*) = 5",
        timeout=40,
    )
    outcomes = {
        code: (status, error)
        for code, status, error in site.query(
            "SELECT schedule_code, status, error FROM schedules_run WHERE schedule_code != 'tick'"
        )
    }
    assert outcomes == {
        "exits": ("failed", "SystemExit: the task called sys.exit(3)"),
        "interrupts": ("failed", "KeyboardInterrupt"),
        "escapes": ("failed", "TaskEscape: escaped"),
        "os-exits": ("failed", "the worker process exited with code 7 (os._exit in the task?)"),
        "segfaults": ("failed", "the worker process was killed by SIGSEGV"),
    }
    # The scheduler, the web server and the other schedule go on.
    ((last,),) = site.query(
        "SELECT max(finished_at) FROM schedules_run WHERE schedule_code!='tick'"
    )
    site.wait_for(
        "SELECT 1 FROM schedules_run WHERE schedule_code='tick' AND status='succeeded' "
        "AND started_at > ? GROUP BY schedule_code HAVING count(*) >= 2",
        last,
    )
    assert process.poll() is None
    assert get(f"{base}/health/")[0] == 200
    assert site.stop(process) == 0


def test_a_blocking_async_task_is_stopped_at_its_timeout_and_nothing_else_waits(site) -> None:
    site.schedules(
        [
            ("blocks", "test.blocking_async", rarely(), {"kwargs": {"seconds": 15}, "timeout": 2}),
            ("tick", "test.echo", EVERY_SECOND, {}),
        ]
    )
    process, base = serve(site)
    # Steady state first: a scheduler's first pass catches up the slots missed while it
    # started, and its first runs wait for workers to start (seconds on a loaded machine).
    site.wait_for(
        "SELECT 1 FROM schedules_run WHERE schedule_code='tick' AND status='succeeded' "
        "GROUP BY schedule_code HAVING count(*) >= 2"
    )
    run_now(site, "blocks")
    site.wait_for("SELECT 1 FROM schedules_run WHERE schedule_code='blocks' AND status='running'")
    health = []
    while not site.query(
        "SELECT 1 FROM schedules_run WHERE schedule_code='blocks' AND status != 'running'"
    ):
        health.append(get(f"{base}/health/"))
        time.sleep(0.1)
    ((status, error, started, finished),) = site.query(
        "SELECT status, error, started_at, finished_at FROM schedules_run "
        "WHERE schedule_code='blocks'"
    )
    assert (status, error) == ("timed_out", "timed out after 2s")
    # Stopped at its timeout, far from the 15 s it blocks (the run's record starts when
    # it is claimed, a moment before a worker takes it).
    assert (parse(finished) - parse(started)).total_seconds() < 8
    assert health and all(code == 200 for code, _ in health)
    assert max(seconds for _, seconds in health) < 1.0, health
    # The 1-second schedule kept its slots while the blocking task ran.
    ticks = site.query(
        "SELECT slot, started_at FROM schedules_run WHERE schedule_code='tick' "
        "AND slot >= ? AND slot <= ?",
        started,
        finished,
    )
    assert len(ticks) >= 2
    # A skipped tick (no start) is as late as it gets; the log says what the loop did then.
    late = [(s, t) for s, t in ticks if t is None or (parse(t) - parse(s)).total_seconds() >= 0.5]
    assert not late, f"ticks late or skipped while the blocking task ran: {late}\n{site.logs()}"
    assert site.stop(process) == 0


def test_a_hung_sync_task_is_stopped_at_its_timeout_and_its_next_slot_runs(site) -> None:
    folder = markers(site)
    site.schedule(
        "hung", "test.hold", {"kind": "interval", "every": 5}, timeout=1,
        kwargs={"marker_dir": str(folder), "seconds": 60},
    )  # fmt: skip
    process = site.start()
    site.wait_for(
        "SELECT 1 FROM schedules_run WHERE schedule_code='hung' AND status='timed_out' "
        "GROUP BY schedule_code HAVING count(*) >= 2",
        timeout=30,
    )
    assert site.stop(process) == 0
    statuses = [s for (s,) in site.query("SELECT status FROM schedules_run ORDER BY id")]
    assert "skipped" not in statuses  # each timed-out run freed its slot
    assert len(pids_started(folder)) >= 2
    assert not any(alive(pid) for pid in pids_started(folder))


def test_replace_never_lets_more_than_max_instances_execute(site) -> None:
    folder = markers(site)
    site.schedule(
        "swap", "test.hold", {"kind": "interval", "every": 2}, overlap="replace",
        max_instances=1, kwargs={"marker_dir": str(folder), "seconds": 60},
    )  # fmt: skip
    process = site.start()
    most = 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        most = max(most, sum(alive(pid) for pid in pids_started(folder)))
        time.sleep(0.02)
    assert site.stop(process) == 0
    assert len(pids_started(folder)) >= 2  # it was replaced, and the replacement ran
    assert most == 1
    cancelled = site.query(
        "SELECT count(*) FROM schedules_run WHERE status='cancelled' "
        "AND error='replaced by a newer run'"
    )
    assert cancelled[0][0] >= 2
    assert not any(alive(pid) for pid in pids_started(folder))


def test_an_operator_cancel_from_the_cli_stops_the_run_within_two_seconds(site) -> None:
    folder = markers(site)
    site.schedule("long", "test.hold", rarely(), kwargs={"marker_dir": str(folder), "seconds": 60})
    process = site.start()
    run_now(site, "long")
    wait_until(lambda: pids_started(folder))
    (pid,) = pids_started(folder)
    ((run_id,),) = site.query("SELECT id FROM schedules_run WHERE status='running'")
    output = site.manage("schedules", "cancel-run", str(run_id))
    cancelled = time.monotonic()  # the command has recorded the cancel by now
    assert output.strip() == f"run #{run_id} cancelled"
    wait_until(lambda: not alive(pid), timeout=5)
    assert time.monotonic() - cancelled < 2.0
    ((status, who),) = site.query("SELECT status, cancelled_by FROM schedules_run")
    assert status == "cancelled" and who.startswith("cli")
    assert site.stop(process) == 0
    # The outcome recorded is still the cancel (the worker's death is not a failure).
    assert site.query("SELECT status FROM schedules_run") == [("cancelled",)]


def test_sigterm_with_a_hung_task_exits_within_grace_plus_five_seconds(site) -> None:
    folder = markers(site)
    site.schedule("stuck", "test.stubborn", rarely(), kwargs={"seconds": 120})
    site.schedule("held", "test.hold", rarely(), kwargs={"marker_dir": str(folder), "seconds": 120})
    process = site.start()
    run_now(site, "stuck", "held")
    wait_until(lambda: pids_started(folder))
    site.wait_for(
        "SELECT count(*) FROM schedules_run WHERE status='running' HAVING count(*) = 2",
        timeout=20,
    )
    time.sleep(0.5)  # the stubborn task has set SIGTERM aside
    grace = float(site.env["SILLO_SHUTDOWN_GRACE"])
    began = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=grace + 5) == 0
    assert time.monotonic() - began < grace + 5
    outcomes = site.query("SELECT status, error FROM schedules_run ORDER BY schedule_code")
    assert outcomes == [("cancelled", "scheduler shut down")] * 2
    assert not any(alive(pid) for pid in pids_started(folder))


def test_sigterm_exits_within_the_grace_beside_an_inline_thread_that_outlived_its_timeout(
    site,
) -> None:
    """The thread cannot be stopped; the process must not wait for it to return."""
    site.schedule("inline", "test.sleep_inline", rarely(), kwargs={"seconds": 120}, timeout=1)
    process = site.start()
    run_now(site, "inline")
    site.wait_for("SELECT 1 FROM schedules_run WHERE status='timed_out'", timeout=20)
    grace = float(site.env["SILLO_SHUTDOWN_GRACE"])
    began = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=grace + 5) == 0
    assert time.monotonic() - began < grace + 5
    assert site.query("SELECT status FROM schedules_run") == [("timed_out",)]
    assert site.query("SELECT stopped_at IS NOT NULL FROM schedules_schedulerinstance") == [(1,)]


def test_health_answers_while_every_worker_is_busy_and_says_runs_wait(site) -> None:
    folder = markers(site)
    site.env["SILLO_MAX_WORKERS"] = "1"
    site.env["SILLO_WORKER_BACKLOG"] = "0"  # no run waits in the scheduler: it stays queued
    site.schedules(
        [
            (f"hold{i}", "test.hold", rarely(), {"kwargs": {"marker_dir": str(folder)}})
            for i in range(2)
        ]
    )
    process, base = serve(site)
    run_now(site, "hold0", "hold1")
    site.wait_for("SELECT 1 FROM schedules_run WHERE status='running'")
    wait_until(lambda: len(pids_started(folder)) == 1)
    time.sleep(0.5)  # the other run had its chance at a worker, and there is none
    assert len(pids_started(folder)) == 1
    status, seconds = get(f"{base}/health/")
    assert status == 200 and seconds < 1.0
    assert site.query("SELECT count(*) FROM schedules_run WHERE status = 'queued'") == [(1,)]
    assert site.stop(process) == 0
