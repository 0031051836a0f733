"""`manage.py schedules create|edit|delete|reset`: the write side, with --json and
one-line errors."""

from __future__ import annotations

import json

import pytest
from django.core.management.base import CommandError

from schedules.models import Run, Schedule
from tests.factories import cli, every, make_schedule

pytestmark = pytest.mark.django_db


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as info:
        cli(*args)
    assert info.value.returncode == 2
    message = str(info.value)
    assert "\n" not in message
    return message


def test_create_with_a_cron_in_a_zone_and_options() -> None:
    data = json.loads(cli(
        "create", "reports", "--task", "test.echo", "--cron", "0 9 * * 1-5",
        "--tz", "Europe/Berlin", "--kwargs", '{"region": "eu"}', "--max-attempts", "3",
        "--timeout", "30", "--overlap", "replace", "--json",
    ))  # fmt: skip
    assert data["description"] == "At 09:00, Monday through Friday, Europe/Berlin"
    assert data["tz"] == "Europe/Berlin"
    assert data["kwargs"] == {"region": "eu"}
    assert data["options"]["max_attempts"] == 3
    assert data["options"]["timeout"] == 30
    assert data["options"]["overlap"] == "replace"
    assert data["source"] == "operator"


@pytest.mark.parametrize(
    ("args", "trigger"),
    [
        (["--every", "90"], {"kind": "interval", "every": 90.0}),
        (["--at", "2030-01-01T09:00", "--tz", "Asia/Tokyo"], {"kind": "date"}),
        (["--spec", '{"kind": "cron", "expression": "@daily"}'], {"kind": "cron"}),
    ],
)
def test_create_takes_every_kind_of_trigger(args, trigger) -> None:
    assert cli("create", "job", "--task", "test.echo", *args).strip() == "created job"
    stored = Schedule.objects.get(code="job").trigger
    assert trigger.items() <= stored.items()


def test_create_takes_the_tasks_declared_options_by_default() -> None:
    cli("create", "h", "--task", "test.every_hour", "--every", "60", "--priority", "4")
    schedule = Schedule.objects.get(code="h")
    assert (schedule.priority, schedule.max_attempts) == (4, 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["x", "--task", "test.echo"], "give the schedule a trigger"),
        (["x", "--task", "no.such", "--every", "60"], "--task: task 'no.such' is not declared"),
        (["x", "--task", "test.echo", "--cron", "0 9 * * 8"], "day-of-week 8 is out of range"),
        (["x", "--task", "test.echo", "--every", "nan"], "trigger: must not contain NaN"),
        (["x", "--task", "test.echo", "--at", "soon"], "trigger"),
        (["x", "--task", "test.echo", "--spec", "{nope"], "--spec: not valid JSON"),
        (["x", "--task", "test.echo", "--every", "60", "--kwargs", "[1]"],
         "--kwargs: must be a JSON object"),
        (["x", "--task", "test.echo", "--every", "60", "--kwargs", "{"],
         "--kwargs: not valid JSON"),
        (["x", "--task", "test.fail", "--every", "60", "--kwargs", '{"y": 1}'],
         "--kwargs: does not fit test.fail"),
        (["x", "--task", "test.echo", "--every", "60", "--tz", "Mars/Base"],
         "--tz: unknown time zone 'Mars/Base'"),
        (["x", "--task", "test.echo", "--every", "60", "--max-attempts", "0"],
         "--max-attempts: must be from 1 to 100"),
        (["x", "--task", "test.echo", "--every", "60", "--timeout", "inf"],
         "--timeout: must be from 0 to 2592000"),
        (["x", "--task", "test.echo", "--every", "60", "--priority", "99999999999999999999"],
         "--priority: must be from"),
        (["x", "--task", "test.echo", "--every", "60", "--priority", "urgent"],
         "--priority: priority must be an integer or one of low, normal, high, critical"),
        (["x", "--task", "test.echo", "--every", "60", "--overlap", "queue"],
         "--overlap: must be one of skip, replace"),
        (["x", "--task", "test.echo", "--every", "60", "--misfire", "maybe"], "--misfire"),
        (["x", "--task", "test.echo", "--every", "60", "--dispatch", "cloud"], "--dispatch"),
        (["x", "--task", "test.echo", "--every", "60", "--retry-delay", "-1"], "--retry-delay"),
        (["x", "--task", "test.echo", "--every", "60", "--max-instances", "0"],
         "--max-instances"),
        (["x", "--task", "test.echo", "--every", "60", "--misfire-grace", "-1"],
         "--misfire-grace"),
        (["bad code", "--task", "test.echo", "--every", "60"],
         "code: Use letters, digits and . _ : - only"),
        (["x", "--task", "test.echo", "--every", "60", "--kwargs", '{"a": "\\u0000"}'],
         "--kwargs: kwargs.a: contains a NUL character"),
        (["x", "--task", "test.echo", "--spec",
          '{"kind": "interval", "every": 60, "seed": "\\u0000"}'],
         "trigger: must not contain the NUL character"),
    ],
)  # fmt: skip
def test_create_refuses_bad_input_in_one_line(args, message) -> None:
    assert message in refused("create", *args)
    assert not Schedule.objects.exists()


def test_create_refuses_an_existing_code() -> None:
    make_schedule("taken", "test.echo", every(60))
    assert refused("create", "taken", "--task", "test.echo", "--every", "60") == (
        "a schedule with code 'taken' already exists"
    )


def test_edit_changes_only_what_is_given() -> None:
    make_schedule("job", "test.echo", {"kind": "cron", "expression": "0 3 * * *"},
                  kwargs={"a": 1}, timeout=20)  # fmt: skip
    data = json.loads(cli("edit", "job", "--max-attempts", "5", "--json"))
    assert data["options"]["max_attempts"] == 5
    assert data["options"]["timeout"] == 20
    assert data["trigger"]["expression"] == "0 3 * * *"
    assert data["kwargs"] == {"a": 1}
    assert cli("edit", "job", "--every", "120", "--timeout", "0").strip() == "saved job"
    schedule = Schedule.objects.get(code="job")
    assert schedule.trigger["every"] == 120.0
    assert schedule.timeout == 0  # explicitly none
    cli("edit", "job", "--default-timeout")
    assert Schedule.objects.get(code="job").timeout is None  # SILLO_DEFAULT_TIMEOUT


def test_edit_refuses_bad_input_and_changes_nothing() -> None:
    make_schedule("job", "test.fail", every(60))
    before = Schedule.objects.values().get(code="job")
    assert "--kwargs: does not fit test.fail" in refused("edit", "job", "--kwargs", '{"z": 1}')
    assert "out of range" in refused("edit", "job", "--cron", "0 25 * * *")
    assert refused("edit", "nope", "--every", "5") == "no schedule with code 'nope'"
    assert Schedule.objects.values().get(code="job") == before


def test_edit_of_an_orphan_keeps_its_task_name() -> None:
    make_schedule("ghost", "no.such.task", every(60))
    assert cli("edit", "ghost", "--every", "30").strip() == "saved ghost"


def test_delete_keeps_the_runs() -> None:
    schedule = make_schedule("job", "test.echo", every(60))
    run = Run.objects.create(schedule=schedule, schedule_code="job", task_name="test.echo",
                             reason="manual")  # fmt: skip
    assert json.loads(cli("delete", "job", "--json")) == {"code": "job", "deleted": True}
    assert not Schedule.objects.filter(code="job").exists()
    assert Run.objects.get(pk=run.pk).schedule_code == "job"
    assert refused("delete", "job") == "no schedule with code 'job'"


def test_reset_restores_the_code_default() -> None:
    make_schedule("test.every_hour", "test.every_hour", every(60), priority=3)
    data = json.loads(cli("reset", "test.every_hour", "--json"))
    assert (data["code"], data["source"], data["options"]["priority"]) == (
        "test.every_hour", "code", 0,
    )  # fmt: skip
    make_schedule("plain", "test.echo", every(60))
    assert "not a code-default record" in refused("reset", "plain")


def test_the_real_command_prints_one_line_and_exits_non_zero(manage) -> None:
    assert manage("migrate", "-v0").returncode == 0
    result = manage("schedules", "create", "x", "--task", "demo.heartbeat", "--cron", "bad")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    result = manage("schedules", "create", "x", "--task", "demo.heartbeat", "--every", "60",
                    "--max-attempts", "many")  # fmt: skip
    assert result.returncode == 2
    assert "invalid int value" in result.stderr and "Traceback" not in result.stderr
    result = manage("schedules", "create", "x", "--task", "demo.heartbeat", "--every", "60",
                    "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["code"] == "x"
