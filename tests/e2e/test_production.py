"""End-to-end on the production profile: PostgreSQL, Redis, several processes.

Run by `python -m tests.production_profile` (part of `make test`).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from http.cookiejar import CookieJar

import pytest

from tests.production_profile import redis

from .conftest import PASSWORD, rarely

pytestmark = [
    pytest.mark.production,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (
            os.environ.get("DATABASE_URL", "").startswith("postgres")
            and os.environ.get("REDIS_URL")
        ),
        reason="needs PostgreSQL and Redis: run python -m tests.production_profile",
    ),
]

SCHEDULES = 200
# Enqueued runs go through Django's db_worker, about 30 a second here: 200 schedules
# left 4,000 runs to drain (131 s of the suite) for the property 60 show as well.
ENQUEUED = 60
SECONDS = 20


def stamp(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def check_every_slot_ran_once(
    site, prefix: str, first: datetime, last: datetime, *, schedules: int = SCHEDULES
) -> None:
    """Each of the test's schedules (codes starting with `prefix`) has exactly one run for each
    of its one-second slots in [first, last]: no gap between its first and last slot there, none
    twice, none missing at either end. Other schedules (the test tasks' code defaults, such as
    an hourly one whose slot can fall in the window) are not the test's."""
    rows = site.query(
        "SELECT schedule_code, count(*), count(DISTINCT slot), min(slot), max(slot) "
        "FROM schedules_run WHERE slot >= ? AND slot <= ? AND attempt = 1 "
        "AND schedule_code LIKE ? GROUP BY schedule_code",
        stamp(first),
        stamp(last),
        f"{prefix}%",
    )
    # The query's bounds are whole seconds (stamp truncates): so are the expectations.
    first, last = (at.replace(microsecond=0) for at in (first, last))
    assert len(rows) == schedules
    for code, runs, slots, earliest, latest in rows:
        earliest, latest = (as_utc(at) for at in (earliest, latest))
        expected = round((latest - earliest).total_seconds()) + 1
        assert (runs, slots) == (expected, expected), (code, runs, slots, expected)
        assert earliest - first < timedelta(seconds=1), (code, earliest, first)
        assert last - latest < timedelta(seconds=1), (code, latest, last)


def as_utc(value: datetime | str) -> datetime:
    """A slot as PostgreSQL (datetime) or SQLite (text) returns it."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def test_three_schedulers_share_the_work_and_survive_a_kill(site) -> None:
    site.schedules([(f"p{i}", "test.echo", {"kind": "interval", "every": 1}, {})
                    for i in range(SCHEDULES)])  # fmt: skip
    processes = [site.start(), site.start(), site.start()]
    site.wait_for("SELECT 1 FROM schedules_schedulerinstance GROUP BY kind HAVING count(*) = 3")
    began = datetime.now(UTC)
    time.sleep(SECONDS / 2)
    victim = processes.pop()
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)
    time.sleep(SECONDS / 2)
    ended = datetime.now(UTC)
    time.sleep(4)  # the victim's heartbeat goes stale (3 s): its runs are recovered
    for process in processes:
        assert site.stop(process) == 0

    check_every_slot_ran_once(site, "p", began + timedelta(seconds=2), ended - timedelta(seconds=2))
    assert site.query("SELECT count(*) FROM schedules_run WHERE status = 'running'") == [(0,)]
    winners = site.query("SELECT count(DISTINCT scheduler) FROM schedules_run")
    assert winners[0][0] >= 2
    dead = site.query("SELECT count(*) FROM schedules_schedulerinstance WHERE stopped_at IS NULL")
    assert dead == [(0,)]


def test_enqueued_runs_are_executed_once_by_the_worker_pool(site) -> None:
    site.schedules([(f"q{i}", "test.echo", {"kind": "interval", "every": 1},
                     {"dispatch": "enqueue", "misfire_grace": 3600, "max_instances": 100})
                    for i in range(ENQUEUED)])  # fmt: skip
    schedulers = [site.start(), site.start(), site.start()]
    workers = [site.start_command("db_worker", "--interval", "0.05") for _ in range(2)]
    site.wait_for("SELECT 1 FROM schedules_schedulerinstance GROUP BY kind HAVING count(*) = 3")
    began = datetime.now(UTC)
    time.sleep(SECONDS / 2)
    victim = schedulers.pop()
    victim.send_signal(signal.SIGKILL)  # a claim and its enqueue share one transaction
    victim.wait(10)
    time.sleep(SECONDS / 2)
    ended = datetime.now(UTC)
    for process in schedulers:
        assert site.stop(process) == 0
    # Let the pool drain the queue, then stop it.
    site.wait_for(
        "SELECT 1 WHERE NOT EXISTS "
        "(SELECT 1 FROM schedules_run WHERE status IN ('queued', 'running'))",
        timeout=300,  # 1,200 runs through two db_workers on a shared 2-core machine
    )
    for process in workers:
        site.stop(process)

    window = (began + timedelta(seconds=2), ended - timedelta(seconds=2))
    check_every_slot_ran_once(site, "q", *window, schedules=ENQUEUED)
    statuses = dict(site.query("SELECT status, count(*) FROM schedules_run GROUP BY status"))
    assert set(statuses) == {"succeeded"}, statuses
    executed_by = site.query(
        "SELECT count(DISTINCT scheduler) FROM schedules_run WHERE scheduler LIKE 'worker-%%'"
    )
    assert executed_by == [(2,)]


def test_a_django_task_scheduled_by_cron_runs_on_the_db_worker_of_its_queue(site) -> None:
    """test.django_db is a django.tasks task on the "nightly" queue, declared as it is."""
    site.schedule("nightly-db", "test.django_db", {"kind": "cron", "expression": "* * * * *"},
                  kwargs={"note": "by cron"})  # fmt: skip
    scheduler = site.start()
    # A worker of the task's own queue only: nothing else would run it.
    worker = site.start_command("db_worker", "--queue-name", "nightly", "--interval", "0.1")
    # The next minute's slot (up to 60 s away), then the worker's turn.
    ((status, result, executed_by, reason),) = site.wait_for(
        "SELECT status, result, scheduler, reason FROM schedules_run "
        "WHERE schedule_code = 'nightly-db' AND status NOT IN ('queued', 'running')",
        timeout=100,
    )
    assert (status, reason) == ("succeeded", "scheduled")
    assert "ran on a worker: by cron" in str(result)
    assert executed_by.startswith("worker-")
    ((dispatch,),) = site.query("SELECT dispatch FROM schedules_schedule WHERE code = 'nightly-db'")
    assert dispatch == "enqueue"  # the task's choice: its runs go to its backend
    ((path, queue, priority, backend),) = site.wait_for(
        "SELECT task_path, queue_name, priority, backend_name "
        "FROM django_tasks_database_dbtaskresult WHERE status = 'SUCCESSFUL'"
    )
    assert (path, queue, priority, backend) == (
        "schedules.scheduler.dispatch.execute_run", "nightly", 3, "default",
    )  # fmt: skip
    assert site.stop(scheduler) == 0
    site.stop(worker)


def test_a_run_event_reaches_a_browser_socket_on_another_process_through_redis(site) -> None:
    import websockets

    from .conftest import free_port

    site.env["DJANGO_SECURE_COOKIES"] = "false"  # plain http on 127.0.0.1
    site.manage("collectstatic", "--noinput", "-v0")
    site.add_user("watcher", "Viewers")
    site.schedule("pinged", "test.echo", rarely())
    port = free_port()
    web = site.start_command_raw(
        ["daphne", "-b", "127.0.0.1", "-p", str(port), "sillo_dash.asgi:application"]
    )
    scheduler = site.start()
    base = f"http://127.0.0.1:{port}"
    session = _log_in(base, "watcher")

    async def listen() -> str:
        headers = {"Cookie": f"sessionid={session}", "Origin": base}
        uri = f"ws://127.0.0.1:{port}/ws/runs/?view=log"
        async with websockets.connect(uri, additional_headers=headers) as socket:
            site.python(
                "from schedules import services; from schedules.models import Schedule; "
                "services.schedule_run_now(schedule=Schedule.objects.get(code='pinged'))"
            )
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                message = await asyncio.wait_for(socket.recv(), timeout=20)
                if "succeeded" in message:
                    return message
        raise AssertionError("no succeeded event")

    # A thread of its own: the browser tests' session loop may be running in this one.
    with ThreadPoolExecutor(1) as pool:
        message = pool.submit(asyncio.run, listen()).result()
    assert "pinged" in message
    site.stop(scheduler)
    site.stop(web)


def _log_in(base: str, username: str) -> str:
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    deadline = time.monotonic() + 30
    while True:
        try:
            page = opener.open(f"{base}/login/", timeout=5).read().decode()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    token = page.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    form = urllib.parse.urlencode(
        {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token}
    ).encode()
    request = urllib.request.Request(
        f"{base}/login/", data=form, headers={"Referer": f"{base}/login/"}
    )
    opener.open(request, timeout=5)
    session = next(c.value for c in jar if c.name == "sessionid")
    assert json.dumps(session)
    return session


def test_a_hung_redis_stalls_neither_the_scheduler_nor_a_command(site) -> None:
    """Redis stopped (SIGSTOP: connections open, no answer) is the channel layer at its
    worst: every send waits. Runs still fire each second, and a command that changes a
    schedule (it announces the change and wakes the schedulers) still returns."""
    # A Redis server of its own: stopping the profile's would stall the tests that other
    # pytest-xdist workers run beside this one.
    with redis() as (redis_url, redis_pid):
        site.env["REDIS_URL"] = redis_url
        hung_redis_stalls_nothing(site, redis_pid)


def hung_redis_stalls_nothing(site, redis: int) -> None:
    site.schedule("beat", "test.echo", {"kind": "interval", "every": 1})
    scheduler = site.start()
    # Until a slot after the scheduler came up has run: the slots that fell due while it
    # started run late, back to back, and one due while the one before it still ran is
    # rightly skipped (max_instances=1), which is no stall and not what this test watches.
    site.wait_for(
        "SELECT 1 FROM schedules_run r CROSS JOIN schedules_schedulerinstance i "
        "WHERE r.schedule_code = 'beat' AND r.status = 'succeeded' AND r.slot > i.started_at"
    )
    os.kill(redis, signal.SIGSTOP)
    try:
        began = datetime.now(UTC)
        site.schedule("added", "test.echo", rarely())  # returns: each send gives up in 2 s
        time.sleep(max(0.0, 6 - (datetime.now(UTC) - began).total_seconds()))
        ended = datetime.now(UTC)
    finally:
        os.kill(redis, signal.SIGCONT)
    assert site.query("SELECT count(*) FROM schedules_schedule WHERE code = 'added'") == [(1,)]
    first, last = (at.replace(microsecond=0) for at in (began, ended - timedelta(seconds=1)))
    site.wait_for(  # until the window's last slot is recorded
        "SELECT 1 FROM schedules_run WHERE schedule_code = 'beat' AND slot >= ? "
        "AND status NOT IN ('queued', 'running')",
        stamp(last),
    )
    rows = site.query(
        "SELECT slot, status FROM schedules_run WHERE schedule_code = 'beat' "
        "AND slot >= ? AND slot <= ? AND attempt = 1 ORDER BY slot",
        stamp(first),
        stamp(last),
    )
    slots = [as_utc(slot) for slot, _status in rows]
    assert slots == [
        first + timedelta(seconds=i) for i in range(int((last - first).total_seconds()) + 1)
    ]
    assert {status for _slot, status in rows} == {"succeeded"}
    assert site.stop(scheduler) == 0
