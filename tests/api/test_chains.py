"""The API's follow-ups: options then / catch / result_as, run-now follow_ups, run links."""

from __future__ import annotations

from schedules.models import Run, Schedule
from tests.factories import every, make_schedule

from .conftest import errors_of

NEVER = every(30 * 86400)


def test_follow_ups_are_set_read_and_checked_by_the_api(as_role) -> None:
    make_schedule("load", "test.echo", NEVER)
    api = as_role("editor", "token")
    body = {"code": "extract", "task_name": "test.echo",
            "trigger": {"kind": "interval", "every": 60},
            "options": {"then": ["load"], "result_as": "data"}}  # fmt: skip
    response = api.post("/schedules", body)
    assert response.status_code == 201, response.json()
    assert response.json()["options"]["then"] == ["load"]
    assert response.json()["options"]["result_as"] == "data"
    refused = api.patch("/schedules/load", {"options": {"catch": ["extract"]}})
    assert refused.status_code == 422
    assert errors_of(refused) == {"options.catch": "a cycle: load catch extract then load"}
    assert Schedule.objects.get(code="load").catch == []


def test_run_now_may_run_this_one_only_and_runs_say_their_parent(as_role) -> None:
    make_schedule("load", "test.echo", NEVER)
    make_schedule("extract", "test.echo", NEVER, then=["load"])
    api = as_role("operator", "token")
    response = api.post("/schedules/extract/run", {"follow_ups": False})
    assert response.status_code == 202
    run = Run.objects.get(pk=response.json()["id"])
    assert run.follow_ups is False
    assert (response.json()["parent_id"], response.json()["depth"]) == (None, 0)


def test_a_deleted_follow_up_does_not_block_edits_of_the_schedule_naming_it(as_role) -> None:
    make_schedule("load", "test.echo", NEVER)
    make_schedule("rescue", "test.echo", NEVER)
    make_schedule("extract", "test.echo", NEVER, then=["load"], catch=["rescue"])
    api = as_role("editor", "token")
    assert api.delete("/schedules/load").status_code == 204

    edited = api.patch("/schedules/extract", {"kwargs": {"x": 1}})

    assert edited.status_code == 200, edited.json()
    assert edited.json()["options"]["then"] == ["load"]  # kept; the schedule page marks it
    added = api.patch("/schedules/extract", {"options": {"catch": ["rescue", "gone"]}})
    assert errors_of(added) == {"options.catch": "no schedule 'gone'"}
    assert Schedule.objects.get(code="extract").catch == ["rescue"]
