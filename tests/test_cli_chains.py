"""`manage.py schedules`: follow-ups on create and edit, `show` lists them, `run --only`."""

from __future__ import annotations

import json

import pytest

from schedules.models import Run, Schedule
from tests.factories import cli, every, make_schedule
from tests.test_cli_writes import refused

pytestmark = pytest.mark.django_db

NEVER = every(30 * 86400)


def test_create_and_edit_set_follow_ups_and_show_lists_them() -> None:
    make_schedule("load", "test.echo", NEVER)
    make_schedule("rescue", "test.echo", NEVER)
    cli("create", "extract", "--task", "test.echo", "--every", "60", "--then", "load",
        "--catch", "rescue", "--result-as", "data")  # fmt: skip
    extract = Schedule.objects.get(code="extract")
    assert (extract.then, extract.catch, extract.result_as) == (["load"], ["rescue"], "data")
    text = cli("show", "extract")
    assert "then               load" in text
    assert "catch              rescue" in text
    assert "runs after         load (then)" not in text
    assert "runs after         extract (then)" in cli("show", "load")
    data = json.loads(cli("show", "load", "--json"))
    assert data["follow_ups"]["upstream"] == [{"code": "extract", "on": "then"}]
    cli("edit", "extract", "--then", "")
    assert Schedule.objects.get(code="extract").then == []


def test_a_cycle_is_one_line_naming_the_option_and_the_path() -> None:
    make_schedule("b", "test.echo", NEVER)
    make_schedule("a", "test.echo", NEVER, then=["b"])
    message = refused("edit", "b", "--catch", "a")
    assert message == "--catch: a cycle: b catch a then b"
    assert Schedule.objects.get(code="b").catch == []


def test_run_only_queues_a_run_that_triggers_no_follow_ups() -> None:
    make_schedule("b", "test.echo", NEVER)
    make_schedule("a", "test.echo", NEVER, then=["b"])
    cli("run", "a", "--only")
    cli("run", "a")
    assert list(Run.objects.order_by("pk").values_list("follow_ups", flat=True)) == [False, True]


def test_runs_lists_a_chained_run_with_its_parent() -> None:
    make_schedule("b", "test.echo", NEVER)
    a = make_schedule("a", "test.echo", NEVER, then=["b"])
    parent = Run.objects.create(schedule=a, schedule_code="a", task_name="test.echo",
                                reason="manual", status="succeeded")  # fmt: skip
    child = Run.objects.create(schedule=Schedule.objects.get(code="b"), schedule_code="b",
                               task_name="test.echo", reason="chained", parent=parent)  # fmt: skip
    line = next(row for row in cli("runs", "b").splitlines() if f"#{child.pk}" in row)
    assert "chained" in line and f"after #{parent.pk}" in line


def test_a_deleted_follow_up_does_not_block_an_edit_of_anything_else() -> None:
    make_schedule("load", "test.echo", NEVER)
    make_schedule("extract", "test.echo", NEVER, then=["load"])
    cli("delete", "load")

    cli("edit", "extract", "--timeout", "5")

    assert Schedule.objects.get(code="extract").timeout == 5
    assert refused("edit", "extract", "--catch", "gone") == "--catch: no schedule 'gone'"
