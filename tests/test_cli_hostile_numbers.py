"""Numbers and nesting Python's JSON reader cannot take (4,300+ digit integers, thousands of
levels), given to the real `manage.py schedules`: one line, exit 2, nothing saved."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_manage

# The commands run on a SQLite data folder of their own (DATABASE_URL dropped): the
# production pass would repeat them unchanged.
pytestmark = pytest.mark.sqlite

HUGE = "9" * 5000  # over the 4,300 digits int() reads from text
DEEP = "[" * 30_000 + "]" * 30_000  # under the 64 KiB bounds, over the recursion limit
DEEPER = "[" * 60_000 + "]" * 60_000  # over the 64 KiB bounds


class Deployment:
    """A migrated data folder with one schedule, "keep" (kwargs {"rows": 1}), and its export."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.export = folder / "export.json"

    def manage(self, *args: str) -> subprocess.CompletedProcess:
        return run_manage(self.folder / "data", *args)

    def schedules(self) -> list[tuple[str, str, str]]:
        """(code, kwargs, trigger) of every stored schedule, read from the database file."""
        with sqlite3.connect(self.folder / "data" / "sillo.sqlite3") as db:
            return db.execute(
                "SELECT code, kwargs, trigger FROM schedules_schedule ORDER BY code"
            ).fetchall()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    # One deployment for the module: each manage.py costs about a second.
    site = Deployment(tmp_path_factory.mktemp("hostile_numbers"))
    for args in (
        ("migrate", "-v0"),
        ("schedules", "create", "keep", "--task", "demo.report", "--every", "60",
         "--kwargs", '{"rows": 1}'),
        ("schedules", "export", "--output", str(site.export)),
    ):  # fmt: skip
        result = site.manage(*args)
        assert result.returncode == 0, result.stderr
    return site


def refused_in_one_line(result: subprocess.CompletedProcess, message: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr[-2000:]
    assert message in result.stderr


CREATE = ("schedules", "create", "x", "--task", "demo.report")
EDIT = ("schedules", "edit", "keep")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((*CREATE, "--every", "60", "--kwargs", f'{{"rows": {HUGE}}}'),
         "--kwargs: not valid JSON: Exceeds the limit (4300 digits)"),
        ((*CREATE, "--every", "60", "--kwargs", f'{{"rows": {DEEP}}}'),
         "--kwargs: not valid JSON: maximum recursion depth exceeded"),
        ((*CREATE, "--spec", f'{{"kind": "interval", "every": {HUGE}}}'),
         "--spec: not valid JSON: Exceeds the limit (4300 digits)"),
        ((*CREATE, "--spec", f'{{"kind": "interval", "every": {DEEP}}}'),
         "--spec: not valid JSON: maximum recursion depth exceeded"),
        ((*CREATE, "--spec", f'{{"kind": "interval", "every": {DEEPER}}}'),
         "--spec: longer than 65536 characters"),
        ((*EDIT, "--kwargs", f'{{"rows": {HUGE}}}'),
         "--kwargs: not valid JSON: Exceeds the limit (4300 digits)"),
        ((*EDIT, "--kwargs", f'{{"rows": {DEEPER}}}'), "--kwargs: over the limit of 65536 bytes"),
    ],
    ids=["create-kwargs-huge", "create-kwargs-deep", "create-spec-huge", "create-spec-deep",
         "create-spec-deeper", "edit-kwargs-huge", "edit-kwargs-deeper"],
)  # fmt: skip
def test_writes_refuse_json_python_cannot_read_in_one_line(
    deployment: Deployment, args: tuple[str, ...], message: str
) -> None:
    before = deployment.schedules()
    refused_in_one_line(deployment.manage(*args), message)
    assert deployment.schedules() == before  # nothing created, "keep" unchanged


def test_import_of_an_export_with_a_huge_integer_is_not_json(deployment: Deployment) -> None:
    text = deployment.export.read_text(encoding="utf-8")
    assert '"keep": {' in text and '"rows": 1' in text
    big = deployment.export.with_name("big.json")
    # The same export, as another schedule whose kwargs hold an integer of 5,000 digits.
    big.write_text(
        text.replace('"keep": {', '"big": {').replace('"rows": 1', f'"rows": {HUGE}'),
        encoding="utf-8",
    )
    before = deployment.schedules()
    result = deployment.manage("schedules", "import", str(big))
    refused_in_one_line(result, f"{big} is not JSON: Exceeds the limit (4300 digits)")
    assert deployment.schedules() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # 9999-12-31 23:30 UTC is already year 10000 in Tokyo: the API answers 422 for it.
        (("--spec", '{"kind": "date", "at": "9999-12-31T23:30:00Z"}', "--tz", "Asia/Tokyo"),
         "trigger: "),
        # Hourly slots run past 9999-12-31 15:00 UTC, midnight of year 10000 in Tokyo.
        (("--spec", '{"kind": "interval", "every": 3600}', "--tz", "Asia/Tokyo", "-n", "30",
          "--after", "9999-12-30T22:00:00Z"),
         "trigger: cannot compute fire times: date value out of range"),
    ],
    ids=["date", "interval"],
)  # fmt: skip
def test_preview_of_times_past_year_9999_in_the_zone_is_refused(
    deployment: Deployment, args: tuple[str, ...], message: str
) -> None:
    result = deployment.manage("schedules", "preview", *args)
    refused_in_one_line(result, message)
    assert result.stdout == ""
