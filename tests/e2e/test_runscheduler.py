"""End-to-end: the real `manage.py runscheduler` process, checked from the records.

These wait real seconds (a few each): they are the only tests that do.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import alive

from .conftest import ROOT, free_port, rarely

pytestmark = pytest.mark.slow


def parse(value: str | datetime) -> datetime:
    """SQLite gives text, PostgreSQL gives datetimes."""
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def test_runs_fire_on_time_and_every_rule_shows_in_the_records(site) -> None:
    soon = (datetime.now(UTC) + timedelta(seconds=4)).isoformat()
    site.schedules(
        [
            ("tick", "test.echo", {"kind": "interval", "every": 1}, {"kwargs": {"n": "ü"}}),
            ("slow", "test.sleep", {"kind": "interval", "every": 1}, {"kwargs": {"seconds": 2.5}}),
            (
                "flaky", "test.fail", {"kind": "date", "at": soon},
                {"max_attempts": 3, "retry_delay": 0.3},
            ),
            ("hangs", "test.hang", {"kind": "date", "at": soon}, {"timeout": 0.5}),
        ]
    )  # fmt: skip
    process = site.start()
    site.wait_for(
        "SELECT 1 FROM schedules_run WHERE schedule_code='flaky' AND attempt=3 AND status='failed'"
    )
    site.wait_for(
        "SELECT 1 FROM schedules_run r CROSS JOIN schedules_schedulerinstance i "
        "WHERE r.schedule_code='tick' AND r.slot > i.started_at "
        "GROUP BY r.schedule_code HAVING count(*) >= 3"
    )
    assert site.stop(process) == 0

    # Slots that passed while the process was starting run late, by design.
    ((up,),) = site.query("SELECT started_at FROM schedules_schedulerinstance")
    on_time = site.query(
        "SELECT slot, started_at, status FROM schedules_run WHERE schedule_code='tick' "
        "AND reason='scheduled' AND slot > ? ORDER BY slot",
        up,
    )
    assert len(on_time) >= 3
    lateness = [(parse(s) - parse(t)).total_seconds() for t, s, _ in on_time]
    assert max(lateness) < 0.5, lateness
    assert {status for *_, status in on_time} == {"succeeded"}
    slots = [parse(t) for t, *_ in on_time]
    assert all(b - a == timedelta(seconds=1) for a, b in zip(slots, slots[1:], strict=False))

    slow = site.query("SELECT status, error FROM schedules_run WHERE schedule_code='slow'")
    assert ("skipped", "skipped: 1 run(s) still in flight (max_instances=1)") in slow

    attempts = site.query(
        "SELECT attempt, reason, status FROM schedules_run WHERE schedule_code='flaky' "
        "ORDER BY attempt"
    )
    assert attempts == [
        (1, "scheduled", "failed"),
        (2, "retry", "failed"),
        (3, "retry", "failed"),
    ]
    assert site.query("SELECT status FROM schedules_schedule WHERE code='flaky'") == [
        ("completed",)
    ]
    assert site.query("SELECT status, error FROM schedules_run WHERE schedule_code='hangs'") == [
        ("timed_out", "timed out after 0.5s")
    ]
    # SIGTERM: nothing left running, the instance says it stopped.
    assert site.query("SELECT count(*) FROM schedules_run WHERE status='running'") == [(0,)]
    assert site.query("SELECT stopped_at IS NOT NULL FROM schedules_schedulerinstance") == [(1,)]


def test_a_run_killed_mid_way_is_interrupted_by_the_next_start(site) -> None:
    site.schedule("long", "test.sleep", rarely(), kwargs={"seconds": 60})
    site.python(
        "from schedules import services; from schedules.models import Schedule; "
        "services.schedule_run_now(schedule=Schedule.objects.get(code='long'))"
    )
    first = site.start()
    site.wait_for("SELECT id FROM schedules_run WHERE status='running'")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)

    second = site.start()
    rows = site.wait_for("SELECT error FROM schedules_run WHERE status='interrupted'", timeout=10)
    assert rows[0][0].endswith("stopped before the run finished")
    assert site.stop(second) == 0


def test_a_killed_schedulers_runs_stop_with_it(site, tmp_path) -> None:
    """Its peers mark its runs interrupted and may retry them: a worker left executing
    the old attempt would run the slot twice."""
    markers = tmp_path / "markers"
    markers.mkdir()
    site.schedule("long", "test.hold", rarely(), kwargs={"marker_dir": str(markers), "seconds": 3})
    site.python(
        "from schedules import services; from schedules.models import Schedule; "
        "services.schedule_run_now(schedule=Schedule.objects.get(code='long'))"
    )
    first = site.start()
    site.wait_for("SELECT id FROM schedules_run WHERE status='running'")
    deadline = time.monotonic() + 20
    while not list(markers.glob("*.start")) and time.monotonic() < deadline:
        time.sleep(0.05)
    (started,) = markers.glob("*.start")
    worker = int(started.stem)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    deadline = time.monotonic() + 2
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(worker)
    time.sleep(3.5)  # past the body's own end
    assert not list(markers.glob("*.end"))


def test_sigterm_lets_a_run_finish_within_the_grace_period(site) -> None:
    site.schedule("brief", "test.sleep", rarely(), kwargs={"seconds": 0.5})
    site.python(
        "from schedules import services; from schedules.models import Schedule; "
        "services.schedule_run_now(schedule=Schedule.objects.get(code='brief'))"
    )
    process = site.start()
    site.wait_for("SELECT id FROM schedules_run WHERE status='running'")
    assert site.stop(process) == 0
    assert site.query("SELECT status FROM schedules_run") == [("succeeded",)]


def test_two_schedulers_on_one_sqlite_database_never_run_a_slot_twice(site) -> None:
    site.schedules(
        [(f"s{i}", "test.echo", {"kind": "interval", "every": 1}, {}) for i in range(30)]
    )
    processes = [site.start(), site.start()]
    # The window starts once both are up: a slow start (a busy machine) is not the subject.
    site.wait_for("SELECT count(*) FROM schedules_schedulerinstance HAVING count(*) >= 2")
    time.sleep(5)
    stopping = datetime.now(UTC)
    for process in processes:
        assert site.stop(process) == 0
    duplicates = site.query(
        "SELECT schedule_code, slot, attempt, count(*) FROM schedules_run "
        "GROUP BY schedule_code, slot, attempt HAVING count(*) > 1"
    )
    assert duplicates == []
    per_scheduler = site.query(
        "SELECT scheduler, count(*) FROM schedules_run WHERE status='succeeded' GROUP BY scheduler"
    )
    assert sum(n for _, n in per_scheduler) >= 30 * 3
    # Both competed for every slot (which one wins a batch is up to the database).
    assert site.query("SELECT count(*) FROM schedules_schedulerinstance") == [(2,)]
    # Once both are up (slots that passed during start-up run late and may
    # overlap the next), every slot runs, and runs once.
    ((up,),) = site.query("SELECT max(started_at) FROM schedules_schedulerinstance")
    # Runs of the last second may still wait for a worker when both stop: they stay
    # queued for the next scheduler, which is not a loss.
    others = site.query(
        "SELECT status, error, count(*) FROM schedules_run WHERE status != 'succeeded' "
        "AND slot > ? AND NOT (status = 'queued' AND slot >= ?) GROUP BY status, error",
        (parse(up) + timedelta(seconds=2)).strftime("%Y-%m-%d %H:%M:%S"),
        (stopping - timedelta(seconds=1.5)).strftime("%Y-%m-%d %H:%M:%S"),
    )
    assert others == [], others


def test_serve_runs_the_web_app_and_the_scheduler_in_one_process(site) -> None:
    import json
    import urllib.error
    import urllib.request

    port = free_port()
    site.manage("collectstatic", "--noinput", "-v0")  # as a deployment does
    site.schedule("tick", "test.echo", {"kind": "interval", "every": 1})
    site.env["SILLO_HEALTH_TOKEN"] = "an-e2e-health-token"  # the details need it (or staff)
    process = site.start("--serve", f"127.0.0.1:{port}")
    site.wait_for("SELECT 1 FROM schedules_run WHERE status='succeeded'")
    deadline = time.monotonic() + 20
    health = urllib.request.Request(
        f"http://127.0.0.1:{port}/health/",
        headers={"Authorization": "Bearer an-e2e-health-token"},
    )
    while True:
        try:
            with urllib.request.urlopen(health, timeout=5) as response:
                body = json.loads(response.read())
                status = response.status
            break
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    assert status == 200
    assert body["scheduler"]["alive"] is True
    assert body["jobs"]["active"] == 1  # tick (the Site pauses the test tasks' code default)
    assert body["jobs"]["paused"] == 1
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5) as response:
        assert response.status == 200
    assert site.stop(process) == 0


def test_serve_answers_pages_while_a_client_trickles_a_request_body(site) -> None:
    """--serve lets one request into Django at a time (SILLO_SERVE_REQUESTS): one whose
    body is still arriving, sent before any login, must not hold that place. (daphne
    buffers the body before the app sees it; the wrapper's own rule is in
    tests/test_serve_admission.py.)"""
    import socket
    import urllib.error
    import urllib.request

    port = free_port()
    site.manage("collectstatic", "--noinput", "-v0")
    process = site.start("--serve", f"127.0.0.1:{port}")
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), 1):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with socket.create_connection(("127.0.0.1", port), 5) as upload:
        upload.sendall(
            b"POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: 100000\r\n\r\nusername=a"
        )
        for path in ("/login/", "/health/", "/login/"):
            request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    status = response.status
            except urllib.error.HTTPError as error:  # /health/ says 503 until a heartbeat
                status = error.code
            assert status in (200, 503), path
    assert site.stop(process) == 0


def test_once_runs_one_pass_and_exits(site) -> None:
    site.schedule("later", "test.echo", rarely())
    site.python(
        "from schedules import services; from schedules.models import Schedule; "
        "services.schedule_run_now(schedule=Schedule.objects.get(code='later'))"
    )
    output = site.manage("runscheduler", "--once")
    assert "one pass: 1 run(s) started and finished" in output
    assert site.query("SELECT status, reason FROM schedules_run") == [("succeeded", "manual")]


def test_the_schedulers_collections_leave_django_alone(site) -> None:
    """What runscheduler set up lives as long as it: frozen out of the collector, whose
    full collections walked all of it and held the loop 70 to 90 ms each."""
    site.schedule("view", "test.gc_view_inline", rarely())
    process = site.start()
    site.wait_for("SELECT 1 FROM schedules_schedulerinstance WHERE stopped_at IS NULL")
    site.manage("schedules", "run", "view")
    ((result,),) = site.wait_for(
        "SELECT result FROM schedules_run WHERE schedule_code = 'view' AND status = 'succeeded'"
    )
    view = result if isinstance(result, dict) else json.loads(result)  # PostgreSQL: jsonb
    assert view["frozen"] > 10_000 and view["walked"] < view["frozen"], view
    assert site.stop(process) == 0


def test_run_wait_follows_the_retries_to_the_final_outcome(site) -> None:
    site.schedule("flaky", "test.fail", rarely(), max_attempts=3, retry_delay=0.2)
    process = site.start()
    site.wait_for("SELECT 1 FROM schedules_schedulerinstance WHERE stopped_at IS NULL")
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "schedules", "run", "flaky", "--wait"],
        env=site.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert [line.split()[2] for line in lines] == ["failed"] * 3
    assert "(attempt 1; retrying)" in lines[0] and "(attempt 2; retrying)" in lines[1]
    assert "attempt 3" in lines[2]
    assert f"run #{lines[2].split()[0][1:]} ended failed" in result.stderr
    assert site.stop(process) == 0


def test_a_run_queued_from_another_process_starts_within_a_second_without_redis(site) -> None:
    """Nothing else is scheduled: only the poll can bring it, and the retry after it."""
    site.schedule("alone", "test.fail", rarely(), max_attempts=2, retry_delay=1)
    process = site.start()
    site.wait_for("SELECT 1 FROM schedules_schedulerinstance")
    time.sleep(1.5)  # the scheduler is asleep with nothing due
    site.manage("schedules", "run", "alone")
    site.wait_for("SELECT 1 FROM schedules_run WHERE attempt = 2 AND status = 'failed'")
    assert site.stop(process) == 0
    (first, retry) = site.query(
        "SELECT queued_at, started_at, finished_at FROM schedules_run ORDER BY attempt"
    )
    assert (parse(first[1]) - parse(first[0])).total_seconds() < 1.2
    # The retry starts at its delay after the failure, not at a later poll or resync.
    assert 0.9 < (parse(retry[1]) - parse(first[2])).total_seconds() < 1.2


@pytest.mark.sqlite
def test_make_run_stops_when_make_is_sent_sigterm(tmp_path) -> None:
    """`kill -TERM <make's pid>` left the server serving with no parent (a fresh-user
    trial): make passes the signal to its child, which was a shell."""
    import contextlib
    import os
    import socket

    from tests.conftest import child_environment

    port = free_port()
    env = {**child_environment(), "SILLO_DATA_DIR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "sillo_dash.settings"}  # fmt: skip
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    log = (tmp_path / "make.log").open("w")
    make = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"HOST=127.0.0.1:{port}", "NODEMO=1",
         f"PY={sys.executable}"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip

    def serving() -> bool:
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", port)) == 0

    try:
        deadline = time.monotonic() + 90
        while not serving():
            assert make.poll() is None and time.monotonic() < deadline, (
                tmp_path / "make.log"
            ).read_text()
            time.sleep(0.2)  # polling a real server's start-up
        make.send_signal(signal.SIGTERM)
        make.wait(timeout=30)
        deadline = time.monotonic() + 15
        while serving():
            assert time.monotonic() < deadline, "the server outlived make"
            time.sleep(0.2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(make.pid, signal.SIGKILL)
        log.close()
