"""`manage.py schedules preview`, run as operators run it."""

from __future__ import annotations

import json

import pytest


def test_preview_prints_text_and_times(manage) -> None:
    result = manage(
        "schedules", "preview", "0 9 * * 1-5", "--tz", "Europe/Berlin", "-n", "3",
        "--after", "2026-03-27T00:00",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "At 09:00, Monday through Friday, Europe/Berlin"
    assert "Fri 2026-03-27 09:00:00 +0100" in lines[1]
    assert "Mon 2026-03-30 09:00:00 +0200" in lines[2]


def test_preview_json_is_iso_times_with_offsets_in_the_zone(manage) -> None:
    result = manage(
        "schedules", "preview", "30 2 * * *", "--tz", "Europe/Berlin", "-n", "3",
        "--after", "2026-03-28T00:00+01:00", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        "2026-03-28T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]


def test_preview_accepts_a_spec_of_any_kind(manage) -> None:
    spec = {
        "kind": "compound",
        "mode": "any",
        "children": [
            {"kind": "interval", "every": 3600},
            {"kind": "date", "at": "2026-01-01T00:30:00+00:00"},
        ],
    }
    result = manage(
        "schedules", "preview", "--spec", json.dumps(spec), "-n", "3",
        "--after", "2026-01-01T00:00:00+00:00", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        "2026-01-01T00:30:00+00:00",
        "2026-01-01T01:00:00+00:00",
        "2026-01-01T02:00:00+00:00",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["0 0 30 2 *"], "never fires"),
        (["* * * * 8"], "day-of-week 8 is out of range 0-7"),
        (["* * * * *", "--tz", "Europe/Berln"], "unknown time zone 'Europe/Berln'"),
        (["* * * * *", "-n", "0"], "-n: must be a whole number from 1 to 1000"),
        (["* * * * *", "-n", "1001"], "-n: must be a whole number from 1 to 1000"),
        (["* * * * *", "-n", "many"], "invalid int value: 'many'"),
        (["* * * * *", "--after", "soon"], "'soon' is not an ISO-8601 date and time"),
        (["--spec", "{oops"], "trigger spec is not valid JSON"),
        (["--spec", '{"kind": "interval", "every": -1}'], "every must be positive"),
        ([], "give either a cron expression or --spec"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(manage, args: list[str], message: str) -> None:
    result = manage("schedules", "preview", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
