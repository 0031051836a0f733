"""Real `runscheduler` processes on a temporary SQLite database."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from tests.conftest import child_environment
from tests.production_profile import free_port  # noqa: F401  (shared by the e2e tests)

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "a-long-test-password"


def rarely() -> dict:
    """An hourly trigger whose first slot is six hours away, for schedules a test runs by
    hand: plain hourly slots fall at every whole hour, and a test that crossed one got
    a scheduled run (or a skip) it did not ask for."""
    anchor = datetime.now(UTC) + timedelta(hours=6)
    return {"kind": "interval", "every": 3600, "anchor": anchor.isoformat()}


class Site:
    """A data folder and database shared by the processes of one test."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.db_path = folder / "e2e.sqlite3"
        self.database_url = f"sqlite:///{self.db_path}"
        server = os.environ.get("DATABASE_URL", "")
        if server.startswith("postgres"):
            # The production profile: a fresh database on the throwaway server.
            name = f"e2e_{uuid.uuid4().hex[:12]}"
            with psycopg.connect(server, autocommit=True) as db:
                db.execute(f'CREATE DATABASE "{name}"')
            self.database_url = server.rsplit("/", 1)[0] + f"/{name}"
        self.env = {
            **child_environment(),
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "SILLO_DATA_DIR": str(folder),
            "DATABASE_URL": self.database_url,
            "SILLO_HEARTBEAT_INTERVAL": "0.5",
            "SILLO_STALE_AFTER": "3",
            "SILLO_RESYNC_INTERVAL": "1",
            "SILLO_SHUTDOWN_GRACE": "1",
            "PYTHONUNBUFFERED": "1",
            "DJANGO_STATIC_ROOT": str(folder / "static"),
        }
        self.processes: list[subprocess.Popen] = []
        # One child process (each costs a second): migrate, then pause the test tasks' hourly
        # code default, whose slot at each whole hour would otherwise add a run to any test
        # that happens to cross one.
        self.python(
            "from django.core.management import call_command\n"
            "call_command('migrate', interactive=False, verbosity=0)\n"
            "from schedules import services\n"
            "from schedules.models import Schedule\n"
            "services.sync_code_defaults()\n"
            "services.schedule_pause(schedule=Schedule.objects.get(code='test.every_hour'))\n"
        )

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            env=self.env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return result.stdout

    def python(self, code: str) -> str:
        return self.manage("shell", "-c", code)

    def add_user(self, username: str, group: str) -> None:
        """A user in one of the demo groups, with the test password."""
        self.python(
            "from django.contrib.auth.models import Group, User\n"
            f"u = User.objects.create_user({username!r}, password={PASSWORD!r})\n"
            f"u.groups.add(Group.objects.get(name={group!r}))\n"
        )

    def schedule(self, code: str, task: str, trigger: dict, **fields: object) -> None:
        self.schedules([(code, task, trigger, fields)])

    def schedules(self, specs: list[tuple[str, str, dict, dict]]) -> None:
        """Create several schedules in one child process (each start costs a second)."""
        lines = ["from schedules import services"]
        for code, task, trigger, fields in specs:
            lines.append(
                f"services.schedule_create(code={code!r}, task_name={task!r}, "
                f"trigger={trigger!r}, **{fields!r})"
            )
        self.python("\n".join(lines))

    def start(self, *args: str) -> subprocess.Popen:
        return self.start_command("runscheduler", *args)

    def start_command(self, *args: str) -> subprocess.Popen:
        return self.start_command_raw([sys.executable, str(ROOT / "manage.py"), *args])

    def start_command_raw(self, command: list[str]) -> subprocess.Popen:
        log = open(self.folder / f"scheduler-{len(self.processes)}.log", "w")  # noqa: SIM115
        bin_dir = str(Path(sys.executable).parent)
        env = {**self.env, "PATH": f"{bin_dir}:{self.env.get('PATH', '')}"}
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.processes.append(process)
        return process

    def stop(self, process: subprocess.Popen, sig: int = signal.SIGTERM) -> int:
        process.send_signal(sig)
        return process.wait(timeout=30)

    def query(self, sql: str, *params: object) -> list[tuple]:
        if self.database_url.startswith("postgres"):
            with psycopg.connect(self.database_url, autocommit=True) as db:
                return db.execute(sql.replace("?", "%s"), params).fetchall()
        with sqlite3.connect(self.db_path, timeout=20) as db:
            return db.execute(sql, params).fetchall()

    def wait_for(self, sql: str, *params: object, timeout: float = 20.0) -> list[tuple]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.query(sql, *params)
            if rows:
                return rows
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for: {sql} {params}\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.folder.glob("scheduler-*.log")))


@pytest.fixture
def site(tmp_path: Path):
    site = Site(tmp_path)
    yield site
    for process in site.processes:
        if process.poll() is None:
            process.kill()
            process.wait()
