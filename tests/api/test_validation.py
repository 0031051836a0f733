"""Bad input for every field: a 4xx in the one error shape naming the field, nothing saved."""

from __future__ import annotations

import pytest

from schedules.models import Run, Schedule

from .conftest import errors_of

GOOD = {
    "code": "fresh",
    "task_name": "test.echo",
    "trigger": {"kind": "cron", "expression": "0 9 * * 1-5", "tz": "Europe/Berlin"},
    "kwargs": {"region": "eu"},
    "tz": "Europe/Berlin",
    "options": {"max_attempts": 3, "timeout": 30},
}


@pytest.fixture
def editor_api(as_role):
    return as_role("editor", "token")


def _with(**changes) -> dict:
    body = {**GOOD, **changes}
    return {key: value for key, value in body.items() if value is not _MISSING}


def _options(**changes) -> dict:
    return _with(options={**GOOD["options"], **changes})


_MISSING = object()

CREATE_CASES = [
    ("code", _with(code=_MISSING), 422),
    ("code", _with(code=""), 422),
    ("code", _with(code="has space"), 422),
    ("code", _with(code="x" * 201), 422),
    ("code", _with(code=7), 422),
    ("task_name", _with(task_name=_MISSING), 422),
    ("task_name", _with(task_name="no.such.task"), 422),
    ("task_name", _with(task_name=["test.echo"]), 422),
    ("trigger", _with(trigger=_MISSING), 422),
    ("trigger", _with(trigger="0 9 * * *"), 422),
    ("trigger", _with(trigger={"kind": "sometimes"}), 422),
    ("trigger", _with(trigger={"kind": "cron", "expression": "0 9 * * 8"}), 422),
    ("trigger", _with(trigger={"kind": "cron", "expression": "0 0 30 2 *"}), 422),
    ("trigger", _with(trigger={"kind": "cron", "expression": "* * * * *", "tz": "Mars/Base"}), 422),
    ("trigger", _with(trigger={"kind": "interval", "every": -5}), 422),
    ("trigger", _with(trigger={"kind": "interval", "every": "often"}), 422),
    ("trigger", _with(trigger={"kind": "date", "at": "yesterday"}), 422),
    ("trigger", _with(trigger={"kind": "compound", "mode": "all", "children": []}), 422),
    ("kwargs", _with(kwargs=[1, 2]), 422),
    ("kwargs", _with(kwargs="{}"), 422),
    ("kwargs", _with(task_name="test.fail", kwargs={"nope": 1}), 422),
    ("kwargs", _with(kwargs={"region": "e\x00u"}), 422),
    ("kwargs", _with(kwargs={"nested": [{"k\x00": 1}]}), 422),
    ("kwargs", _with(kwargs={"ratio": float("nan")}), 422),
    ("kwargs", _with(kwargs={"deep": [[{"x": float("inf")}]]}), 422),
    ("trigger", _with(trigger={"kind": "interval", "every": 60, "jitter": float("nan")}), 422),
    ("trigger", _with(trigger={"kind": "interval", "every": 60, "seed": "\x00"}), 422),
    ("task_name", _with(task_name="test\x00echo"), 422),
    ("tz", _with(tz="UTC\x00"), 422),
    ("tz", _with(tz="Europe/Berln"), 422),
    ("tz", _with(tz=5), 422),
    ("options", _with(options=[]), 422),
    ("options.timeout", _options(timeout=-0.001), 422),
    ("options.timeout", _options(timeout=-1), 422),
    ("options.timeout", _options(timeout="30"), 422),
    ("options.timeout", _options(timeout=10**9), 422),
    ("options.max_attempts", _options(max_attempts=0), 422),
    ("options.max_attempts", _options(max_attempts=2.5), 422),
    ("options.max_attempts", _options(max_attempts=10**30), 422),
    ("options.max_attempts", _options(max_attempts=None), 422),
    ("options.retry_delay", _options(retry_delay=-1), 422),
    ("options.retry_delay", _options(retry_delay=True), 422),
    ("options.max_instances", _options(max_instances=0), 422),
    ("options.max_instances", _options(max_instances="1"), 422),
    ("options.overlap", _options(overlap="queue"), 422),
    ("options.misfire", _options(misfire="sometimes"), 422),
    ("options.misfire_grace", _options(misfire_grace=-0.5), 422),
    ("options.priority", _options(priority=10**12), 422),
    ("options.dispatch", _options(dispatch="cloud"), 422),
    ("options.colour", _options(colour="red"), 422),
    ("surprise", _with(surprise=True), 422),
]


@pytest.mark.parametrize(("field", "body", "status"), CREATE_CASES, ids=lambda v: str(v)[:40])
def test_create_names_the_field_at_fault(editor_api, field, body, status) -> None:
    response = editor_api.post("/schedules", body)
    assert response.status_code == status, response.content
    assert field in errors_of(response), errors_of(response)
    assert not Schedule.objects.filter(code=body.get("code")).exists()


def test_the_good_body_is_created_with_its_options(editor_api) -> None:
    response = editor_api.post("/schedules", GOOD)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["options"]["max_attempts"] == 3 and body["options"]["timeout"] == 30
    assert body["description"] == "At 09:00, Monday through Friday, Europe/Berlin"


def test_enqueue_is_refused_when_the_tasks_backend_cannot_defer(editor_api, settings) -> None:
    """Django's default TASKS backend runs a task at once: a run handed to it stayed queued
    until cancelled (an integrator's trial). The backend is named instead."""
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}
    body = {**GOOD, "options": {**GOOD["options"], "dispatch": "enqueue"}}
    response = editor_api.post("/schedules", body)
    assert response.status_code == 422, response.content
    assert "ImmediateBackend" in errors_of(response)["options.dispatch"]
    assert not Schedule.objects.exists()
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    assert editor_api.post("/schedules", body).status_code == 201  # one that can defer


def test_a_duplicate_code_is_a_conflict_naming_code(editor_api) -> None:
    assert editor_api.post("/schedules", GOOD).status_code == 201
    response = editor_api.post("/schedules", GOOD)
    assert response.status_code == 409
    assert errors_of(response) == {"code": "a schedule with code 'fresh' already exists"}


def test_a_body_that_is_not_json_is_a_400_naming_the_body(editor_api) -> None:
    response = editor_api.client.post(
        "/api/v1/schedules", data="{not json", content_type="application/json",
        **editor_api.headers,
    )  # fmt: skip
    assert response.status_code == 400
    assert "body" in errors_of(response)


UPDATE_CASES = [
    ("code", {"code": "renamed"}),
    ("task_name", {"task_name": "no.such.task"}),
    ("task_name", {"task_name": None}),
    ("trigger", {"trigger": {"kind": "cron", "expression": "61 * * * *"}}),
    ("trigger", {"trigger": None}),
    ("kwargs", {"kwargs": ["a"]}),
    ("kwargs", {"task_name": "test.fail", "kwargs": {"nope": 1}}),
    ("kwargs", {"kwargs": None}),
    ("tz", {"tz": "Nowhere/Land"}),
    ("options.max_attempts", {"options": {"max_attempts": -1}}),
    ("options.overlap", {"options": {"overlap": 3}}),
    ("options.timeout", {"options": {"timeout": float("inf")}}),
]


@pytest.mark.parametrize(("field", "body"), UPDATE_CASES, ids=lambda v: str(v)[:40])
def test_update_names_the_field_at_fault_and_changes_nothing(
    editor_api, schedule, field, body
) -> None:
    before = Schedule.objects.values().get(pk=schedule.pk)
    response = editor_api.patch("/schedules/nightly", body)
    assert response.status_code == 422, response.content
    assert field in errors_of(response), errors_of(response)
    assert Schedule.objects.values().get(pk=schedule.pk) == before


def test_an_orphan_keeps_its_task_name_on_update(editor_api, orphan) -> None:
    response = editor_api.patch("/schedules/ghost", {"kwargs": {"a": 1}})
    assert response.status_code == 200, response.content
    assert response.json()["flags"] == ["orphan"]


PREVIEW = {"trigger": {"kind": "cron", "expression": "0 9 * * *"}}
PREVIEW_CASES = [
    ("trigger", {}),
    ("trigger", {"trigger": {"kind": "cron", "expression": "0 25 * * *"}}),
    ("trigger", {"trigger": 5}),
    ("tz", {**PREVIEW, "tz": "Atlantis"}),
    ("count", {**PREVIEW, "count": 0}),
    ("count", {**PREVIEW, "count": 101}),
    ("count", {**PREVIEW, "count": "3"}),
    ("after", {**PREVIEW, "after": "next tuesday"}),
    ("after", {**PREVIEW, "after": 12}),
    ("extra", {**PREVIEW, "extra": 1}),
]


@pytest.mark.parametrize(("field", "body"), PREVIEW_CASES, ids=lambda v: str(v)[:40])
def test_preview_names_the_field_at_fault(as_role, field, body) -> None:
    response = as_role("viewer", "token").post("/triggers/preview", body)
    assert response.status_code == 422, response.content
    assert field in errors_of(response), errors_of(response)


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


RUN_NOW_CASES = [
    ("kwargs", {"kwargs": {"message": "\x00"}}),
    ("kwargs", {"kwargs": [1]}),
    ("kwargs", {"kwargs": {"unexpected": True}}),
    ("extra", {"kwargs": {}, "extra": 1}),
    # The kwargs rules a schedule's kwargs follow: the scheduler refuses a run that breaks
    # them, so run-now must not queue one (it stored 2 MB kwargs, twice with the audit).
    ("kwargs", {"kwargs": {"message": 2**70}}),
    ("kwargs", {"kwargs": {"message": nested(40)}}),
    ("kwargs", {"kwargs": {"message": "x" * 70_000}}),
    ("kwargs", {"kwargs": {"message": "\ud800"}}),
]


@pytest.mark.parametrize(("field", "body"), RUN_NOW_CASES, ids=lambda v: str(v)[:40])
def test_run_now_names_the_field_at_fault_and_queues_nothing(as_role, db, field, body) -> None:
    from tests.factories import every, make_schedule

    make_schedule("failing", "test.fail", every(60))
    response = as_role("operator", "token").post("/schedules/failing/run", body)
    assert response.status_code == 422, response.content
    assert field in errors_of(response), errors_of(response)
    assert not Run.objects.exists()


LIST_CASES = [
    ("/schedules?status=sleeping", "status"),
    ("/schedules?outcome=meh", "outcome"),
    ("/schedules?flag=weird", "flag"),
    ("/schedules?limit=0", "limit"),
    ("/schedules?limit=abc", "limit"),
    ("/schedules?offset=-1", "offset"),
    ("/runs?status=sleeping", "status"),
    ("/runs?reason=whim", "reason"),
    ("/runs?since=yesterday", "since"),
    ("/runs?since=2026-06-01T12:00:00", "since"),
    ("/runs?until=2026-13-01T00:00:00Z", "until"),
    # Valid dates whose UTC time is past year 9999 or before year 1 (a 500 from the backend).
    ("/runs?until=9999-12-31T23:59:59-01:00", "until"),
    ("/runs?since=0001-01-01T00:00:00%2B01:00", "since"),
    ("/runs?limit=501", "limit"),
    ("/runs?cursor=!!!", "cursor"),
    ("/schedules?q=a%00b", "q"),
    ("/runs?task=a%00b", "task"),
    ("/runs?schedule=%00", "schedule"),
    ("/runs?cursor=cnVuOng", "cursor"),
    ("/runs?cursor=" + "A" * 65, "cursor"),
    # Forged: what _encode never writes (non-ASCII digits, a leading zero, past 2**63 - 1).
    *[
        ("/runs?cursor=" + _forged, "cursor")
        for _forged in ("cnVuOtmj", "cnVuOjA5", "cnVuOjkyMjMzNzIwMzY4NTQ3NzU4MDg", "cnVuOjA")
    ],
]


@pytest.mark.parametrize(("path", "field"), LIST_CASES)
def test_list_filters_name_the_parameter_at_fault(as_role, db, path, field) -> None:
    response = as_role("viewer", "token").get(path)
    assert response.status_code == 422, response.content
    assert field in errors_of(response), errors_of(response)


def test_a_nul_character_in_a_code_is_simply_not_found(as_role, db) -> None:
    # PostgreSQL refuses NUL in a query parameter; the lookup must not reach it.
    response = as_role("viewer", "token").get("/schedules/a%00b")
    assert response.status_code == 404
    assert errors_of(response)


def test_a_body_past_djangos_upload_limit_is_refused_as_too_large(as_role, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    api = as_role("editor", "token")
    body = {"trigger": {"kind": "interval", "every": 5}, "padding": "x" * 2_000}
    for path in ("/triggers/preview", "/schedules"):
        response = api.post(path, body)
        assert response.status_code == 413, response.content
        assert response.json()["code"] == "too_large"
        assert errors_of(response) == {"body": "the request body is too large"}


def test_a_query_past_djangos_field_limit_is_a_bad_request(as_role, settings) -> None:
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    api = as_role("viewer", "token")
    query = "&".join(["status=failed"] * 11)
    for path in ("/runs", "/schedules"):
        response = api.get(f"{path}?{query}")
        assert response.status_code == 400, response.content
        assert "the request was refused" in errors_of(response)[None]


def test_a_kwargs_problem_is_said_once_in_the_message(as_role, schedule) -> None:
    response = as_role("editor", "token").patch("/schedules/nightly", {"kwargs": {"rows": 2**70}})
    assert response.status_code == 422
    assert errors_of(response) == {
        "kwargs": "kwargs.rows: integer out of range (must fit in 64 bits)"
    }
    assert response.json()["message"] == "kwargs.rows: integer out of range (must fit in 64 bits)"
