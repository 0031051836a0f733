"""/schedules: what each call does to the records, through the same services as the dashboard."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, OperationalError

from schedules import services
from schedules.models import Run, Schedule
from tests.factories import every, make_schedule

from .conftest import errors_of


@pytest.fixture
def editor_api(as_role):
    return as_role("editor", "token")


def test_list_uses_the_list_pages_search_and_filters(as_role, schedule, orphan) -> None:
    make_schedule("weekly-report", "test.echo", every(3600))
    services.schedule_pause(schedule=Schedule.objects.get(code="weekly-report"))
    api = as_role("viewer", "token")

    assert [s["code"] for s in api.get("/schedules").json()["results"]] == [
        "ghost", "nightly", "weekly-report",
    ]  # fmt: skip
    assert [s["code"] for s in api.get("/schedules?q=report").json()["results"]] == [
        "weekly-report"
    ]
    assert [s["code"] for s in api.get("/schedules?status=paused").json()["results"]] == [
        "weekly-report"
    ]
    assert [s["code"] for s in api.get("/schedules?flag=orphan").json()["results"]] == ["ghost"]
    assert api.get("/schedules?outcome=never").json()["count"] == 3
    page = api.get("/schedules?limit=2&offset=1").json()
    assert page["count"] == 3
    assert [s["code"] for s in page["results"]] == ["nightly", "weekly-report"]


def test_show_has_the_spec_flags_options_and_next_fire_times(as_role, schedule) -> None:
    body = as_role("viewer").get("/schedules/nightly").json()
    assert body["id"] == schedule.pk
    assert body["trigger"] == {"kind": "cron", "expression": "0 3 * * *", "tz": "UTC"}
    assert body["description"] == "At 03:00, UTC"
    assert body["flags"] == []
    assert body["options"]["max_attempts"] == 1
    assert len(body["next_fire_times"]) == 10
    assert all(t.endswith("T03:00:00Z") for t in body["next_fire_times"])


def test_create_takes_options_left_out_from_the_tasks_declaration(editor_api) -> None:
    response = editor_api.post(
        "/schedules",
        {"code": "hourly-copy", "task_name": "test.every_hour", "trigger": every(600),
         "options": {"priority": 5}},
    )  # fmt: skip
    assert response.status_code == 201, response.content
    schedule = Schedule.objects.get(code="hourly-copy")
    assert (schedule.priority, schedule.max_attempts, schedule.source) == (5, 1, "operator")
    assert schedule.trigger["seed"] == "hourly-copy"  # normalised like the dashboard's
    assert schedule.next_run_at is not None


def test_update_changes_only_the_fields_given(editor_api, schedule) -> None:
    response = editor_api.patch(
        "/schedules/nightly",
        {"kwargs": {"region": "us"}, "options": {"max_attempts": 4, "timeout": None}},
    )
    assert response.status_code == 200, response.content
    schedule.refresh_from_db()
    assert schedule.kwargs == {"region": "us"}
    assert (schedule.max_attempts, schedule.timeout) == (4, None)
    assert schedule.trigger["expression"] == "0 3 * * *"


def test_update_of_the_trigger_moves_the_next_slot(editor_api, schedule) -> None:
    response = editor_api.patch("/schedules/nightly", {"trigger": {"kind": "cron",
                                "expression": "30 4 * * *", "tz": "Europe/Berlin"}})  # fmt: skip
    assert response.status_code == 200, response.content
    assert response.json()["description"] == "At 04:30, Europe/Berlin"
    schedule.refresh_from_db()
    assert schedule.next_run_at.astimezone().minute == 30


def test_delete_keeps_the_runs_in_the_log(editor_api, schedule) -> None:
    run = services.schedule_run_now(schedule=schedule)
    assert editor_api.delete("/schedules/nightly").status_code == 204
    assert not Schedule.objects.filter(code="nightly").exists()
    assert Run.objects.get(pk=run.pk).schedule_code == "nightly"
    assert editor_api.delete("/schedules/nightly").status_code == 404


def test_status_actions_follow_the_transitions(as_role, schedule) -> None:
    api = as_role("operator", "token")
    assert api.post("/schedules/nightly/pause").json()["status"] == "paused"
    refused = api.post("/schedules/nightly/pause")
    assert refused.status_code == 409
    assert errors_of(refused) == {None: "cannot pause schedule 'nightly': it is paused"}
    assert api.post("/schedules/nightly/resume").json()["status"] == "active"
    assert api.post("/schedules/nightly/cancel").json()["status"] == "cancelled"
    assert api.post("/schedules/nightly/resume").status_code == 409


def test_reset_restores_the_code_default_and_is_refused_without_one(editor_api, schedule) -> None:
    make_schedule("test.every_hour", "test.every_hour", every(60), priority=7)
    response = editor_api.post("/schedules/test.every_hour/reset")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["code"], body["source"], body["options"]["priority"]) == (
        "test.every_hour", "code", 0,
    )  # fmt: skip
    assert body["description"] == "Every 1 hour"
    refused = editor_api.post("/schedules/nightly/reset")
    assert refused.status_code == 409
    assert "not a code-default record" in errors_of(refused)[None]


def test_an_update_against_an_old_version_is_refused_naming_what_changed(
    editor_api, schedule
) -> None:
    version = editor_api.get("/schedules/nightly").json()["version"]
    first = editor_api.patch("/schedules/nightly", {"version": version, "kwargs": {"a": 1}})
    assert first.status_code == 200, first.content
    assert first.json()["version"] == version + 1
    stale = editor_api.patch("/schedules/nightly", {"version": version, "kwargs": {"a": 2}})
    assert stale.status_code == 409
    problems = errors_of(stale)
    assert "changed by someone else" in problems[None]
    assert problems["kwargs"] == 'now {"a": 1}, yours {"a": 2}'  # as JSON, as sent
    assert Schedule.objects.get(code="nightly").kwargs == {"a": 1}


def test_a_priority_may_be_a_level_name(editor_api, schedule) -> None:
    response = editor_api.patch("/schedules/nightly", {"options": {"priority": "high"}})
    assert response.status_code == 200, response.content
    assert response.json()["options"]["priority"] == 10
    bad = editor_api.patch("/schedules/nightly", {"options": {"priority": "urgent"}})
    assert bad.status_code == 422
    assert "options.priority" in errors_of(bad)


def test_reactivate_brings_back_a_cancelled_schedule(as_role, schedule) -> None:
    api = as_role("operator", "token")
    api.post("/schedules/nightly/cancel")
    response = api.post("/schedules/nightly/reactivate")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "active"
    assert api.post("/schedules/nightly/reactivate").status_code == 409


def test_run_now_merges_kwargs_for_that_run_only(as_role, schedule) -> None:
    services.schedule_update(schedule=schedule, trigger=schedule.trigger, kwargs={"a": 1, "b": 2})
    api = as_role("operator", "token")
    response = api.post("/schedules/nightly/run", {"kwargs": {"b": 3}})
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["status"], body["reason"], body["kwargs"]) == (
        "queued",
        "manual",
        {"a": 1, "b": 3},
    )
    assert body["requested_by"].startswith("operator-token")
    schedule.refresh_from_db()
    assert schedule.kwargs == {"a": 1, "b": 2}
    assert api.post("/schedules/nightly/run").json()["kwargs"] == {"a": 1, "b": 2}


def test_run_now_is_refused_for_an_orphan(as_role, orphan) -> None:
    response = as_role("operator", "token").post("/schedules/ghost/run")
    assert response.status_code == 409
    assert "not declared (orphan)" in errors_of(response)[None]
    assert not Run.objects.exists()


def test_tasks_lists_declarations_with_their_defaults(as_role, db) -> None:
    body = as_role("viewer", "token").get("/tasks").json()
    tasks = {task["name"]: task for task in body["results"]}
    assert tasks["test.every_hour"]["default_description"] == "Every 1 hour"
    assert tasks["test.fail"]["parameters"] == ["message='boom'"]
    assert tasks["test.echo"]["parameters"] == ["**kwargs"]
    assert tasks["test.echo_async"]["is_async"] is True
    assert body["failed_imports"] == {}


def test_preview_gives_text_and_times_in_the_triggers_zone(as_role, db) -> None:
    response = as_role("viewer", "token").post(
        "/triggers/preview",
        {"trigger": {"kind": "cron", "expression": "30 2 * * *", "tz": "Europe/Berlin"},
         "count": 3, "after": "2026-03-28T00:00"},
    )  # fmt: skip
    assert response.status_code == 200, response.content
    assert response.json() == {
        "description": "At 02:30, Europe/Berlin",
        "zone": "Europe/Berlin",
        "times": ["2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00",
                  "2026-03-30T02:30:00+02:00"],
    }  # fmt: skip


def test_stats_count_jobs_runs_and_the_queue(as_role, schedule, orphan) -> None:
    services.schedule_pause(schedule=orphan)
    services.schedule_run_now(schedule=schedule)
    body = as_role("viewer", "token").get("/stats").json()
    assert body["jobs"] == {"total": 2, "active": 1, "paused": 1, "cancelled": 0, "completed": 0}
    assert body["queue"]["queued"] == 1
    assert body["queue"]["oldest_due_age_seconds"] >= 0
    assert body["queue"]["backlog"] == "STALLED"  # due, and no scheduler is alive
    assert body["runs"]["running"] == 0
    assert (body["schedulers"], body["uptime_seconds"]) == (0, None)


@pytest.mark.parametrize(
    ("failure", "status", "code"),
    [
        (OperationalError("database is locked"), 503, "unavailable"),
        (IntegrityError("UNIQUE constraint failed"), 409, "conflict"),
        (RuntimeError("a bug"), 500, "server_error"),
    ],
)
def test_what_no_handler_names_still_answers_in_the_one_shape(
    as_role, schedule, monkeypatch, failure, status, code
) -> None:
    """A host on SQLite without the busy timeout got Django's traceback page (DEBUG) or
    its HTML 500 page for "database is locked" (an integrator's trial)."""
    from schedules.api.routers import schedules as router

    def fails(**_kwargs):
        raise failure

    monkeypatch.setattr(router.services, "schedule_run_now", fails)
    response = as_role("operator", "token").post("/schedules/nightly/run")
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert errors_of(response) == {None: response.json()["message"]}
    assert response.json()["code"] == code
    assert (
        "Traceback" not in response.content.decode()
        and str(failure) not in response.json()["message"]
    )
    if status == 503:
        assert response["Retry-After"] == "1"


def test_a_created_schedule_answers_its_next_run_in_utc_as_every_read_does(editor_api) -> None:
    berlin = {"kind": "cron", "expression": "0 9 * * *", "tz": "Europe/Berlin"}
    body = {"code": "berlin", "task_name": "test.echo", "trigger": berlin}
    created = editor_api.post("/schedules", body)
    assert created.status_code == 201, created.content
    read = editor_api.get("/schedules/berlin").json()
    assert created.json()["next_run_at"] == read["next_run_at"]
    assert read["next_run_at"].endswith("Z") or read["next_run_at"].endswith("+00:00")


def test_the_rate_limit_is_read_and_set_through_the_options(as_role, schedule) -> None:
    api = as_role("editor", "token")
    assert api.get("/schedules/nightly").json()["options"]["rate_limit"] is None

    limited = api.patch(
        "/schedules/nightly",
        {"options": {"rate_limit": 5, "rate_period": 30.0, "rate_mode": "wait"}},
    )

    assert limited.status_code == 200, limited.json()
    options = limited.json()["options"]
    assert (options["rate_limit"], options["rate_period"], options["rate_mode"]) == (
        5,
        30.0,
        "wait",
    )
    stored = Schedule.objects.get(code="nightly")
    assert (stored.rate_limit, stored.rate_period, stored.rate_mode) == (5, 30.0, "wait")
    refused = api.patch("/schedules/nightly", {"options": {"rate_limit": 0, "rate_mode": "drop"}})
    assert set(errors_of(refused)) == {"options.rate_limit", "options.rate_mode"}
    unlimited = api.patch("/schedules/nightly", {"options": {"rate_limit": None}})
    assert unlimited.json()["options"]["rate_limit"] is None
    assert Schedule.objects.get(code="nightly").rate_limit is None
