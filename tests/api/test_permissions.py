"""Every endpoint, for every role, over the session and with a token of that role.

Anonymous callers get 401; a caller without the permission 403; with it, the
endpoint's success status. Viewers view, Operators also operate (pause, resume,
cancel, run, cancel a run), Editors also add, change, delete and reset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.test import Client

from schedules import services, tokens
from schedules.models import Run, Schedule
from tests.factories import every, make_schedule

from .conftest import Caller, api_member, errors_of

ROLES = ["anonymous", "stranger", "viewer", "operator", "editor"]
PERMS = {
    "anonymous": set(),
    "stranger": set(),
    "viewer": {"view"},
    "operator": {"view", "operate"},
    "editor": {"view", "operate", "add", "change", "delete"},
}


@dataclass
class Endpoint:
    method: str
    path: str
    perm: str
    ok: int
    body: object = None
    setup: Callable[[], None] = lambda: None


def _paused() -> None:
    services.schedule_pause(schedule=Schedule.objects.get(code="nightly"))


def _queued_run() -> None:
    services.schedule_run_now(schedule=Schedule.objects.get(code="nightly"))


def _code_default() -> None:
    make_schedule("test.every_hour", "test.every_hour", every(60))


def _cancelled() -> None:
    services.schedule_cancel(schedule=Schedule.objects.get(code="nightly"))


CREATE = {"code": "fresh", "task_name": "test.echo", "trigger": every(60), "kwargs": {"a": 1}}
PREVIEW = {"trigger": {"kind": "cron", "expression": "0 9 * * 1-5"}, "count": 3}

ENDPOINTS = [
    Endpoint("GET", "/schedules", "view", 200),
    Endpoint("GET", "/schedules/nightly", "view", 200),
    Endpoint("POST", "/schedules", "add", 201, CREATE),
    Endpoint("PATCH", "/schedules/nightly", "change", 200, {"kwargs": {"b": 2}}),
    Endpoint("DELETE", "/schedules/nightly", "delete", 204),
    Endpoint("POST", "/schedules/nightly/pause", "operate", 200),
    Endpoint("POST", "/schedules/nightly/resume", "operate", 200, setup=_paused),
    Endpoint("POST", "/schedules/nightly/cancel", "operate", 200),
    Endpoint("POST", "/schedules/nightly/reactivate", "operate", 200, setup=_cancelled),
    Endpoint("POST", "/schedules/test.every_hour/reset", "change", 200, setup=_code_default),
    Endpoint("POST", "/schedules/nightly/run", "operate", 202, {"kwargs": {"x": 1}}),
    Endpoint("GET", "/runs", "view", 200, setup=_queued_run),
    Endpoint("GET", "/runs/{run}", "view", 200, setup=_queued_run),
    Endpoint("GET", "/runs/{run}/output", "view", 200, setup=_queued_run),
    Endpoint("POST", "/runs/{run}/cancel", "operate", 200, setup=_queued_run),
    Endpoint("GET", "/tasks", "view", 200),
    Endpoint("POST", "/triggers/preview", "view", 200, PREVIEW),
    Endpoint("GET", "/stats", "view", 200),
]


CALLERS = [("anonymous", "session")] + [
    (role, via) for role in ROLES[1:] for via in ("session", "token")
]


@pytest.mark.parametrize(("role", "via"), CALLERS, ids=lambda value: value)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e.method} {e.path}")
def test_each_endpoint_answers_each_role_by_its_permissions(
    as_role, schedule, endpoint: Endpoint, role: str, via: str
) -> None:
    endpoint.setup()
    run = Run.objects.order_by("-pk").first()
    path = endpoint.path.replace("{run}", str(run.pk if run else 0))
    caller = as_role(role, via)
    before = Schedule.objects.count(), Run.objects.count()

    response = caller.call(endpoint.method, path, endpoint.body)

    if role == "anonymous":
        assert response.status_code == 401, response.content
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert errors_of(response) == {None: errors_of(response)[None]}
    elif endpoint.perm not in PERMS[role]:
        assert response.status_code == 403, response.content
        assert "you need the permission" in errors_of(response)[None]
    else:
        assert response.status_code == endpoint.ok, response.content
    if response.status_code >= 400:  # a refusal changes nothing
        assert (Schedule.objects.count(), Run.objects.count()) == before
        expected = {_paused: "paused", _cancelled: "cancelled"}.get(endpoint.setup, "active")
        assert Schedule.objects.get(code="nightly").status == expected


# Bodies and queries that fail validation: a caller who may not call the endpoint
# must hear that, not what was wrong with input it was not allowed to send.
BAD_INPUT = [
    ("stranger", "GET", "/schedules?limit=0", None),
    ("stranger", "GET", "/runs?cursor=%00", None),
    ("stranger", "POST", "/triggers/preview", {"trigger": "nonsense", "count": -1}),
    ("viewer", "POST", "/schedules", {"code": 5, "trigger": []}),
    ("viewer", "PATCH", "/schedules/nightly", {"kwargs": "not an object", "version": "x"}),
    ("viewer", "PATCH", "/schedules/nope", {"kwargs": "not an object"}),
    ("viewer", "POST", "/schedules/nightly/run", {"kwargs": [1, 2]}),
    ("operator", "POST", "/schedules", {"code": ""}),
]


@pytest.mark.parametrize("via", ["session", "token"])
@pytest.mark.parametrize(("role", "method", "path", "body"), BAD_INPUT, ids=lambda v: str(v))
def test_a_caller_without_the_permission_gets_403_whatever_it_sent(
    as_role, schedule, role, method, path, body, via
) -> None:
    before = Schedule.objects.get(code="nightly").version, Run.objects.count()

    response = as_role(role, via).call(method, path, body)

    assert response.status_code == 403, response.content
    assert "you need the permission" in errors_of(response)[None]
    assert (Schedule.objects.get(code="nightly").version, Run.objects.count()) == before


def test_a_caller_with_the_permission_still_hears_what_is_wrong_with_its_input(
    as_role, schedule
) -> None:
    response = as_role("editor", "token").call("PATCH", "/schedules/nightly", {"kwargs": "x"})
    assert response.status_code == 422, response.content
    assert as_role("viewer", "token").get("/schedules?limit=0").status_code == 422


@pytest.mark.parametrize("via", ["session", "token"])
def test_the_schema_is_served_to_any_authenticated_caller(as_role, via) -> None:
    assert as_role("stranger", via).get("/openapi.json").status_code == 200
    response = as_role("anonymous").get("/openapi.json")
    assert response.status_code == 401
    assert errors_of(response)


def test_a_viewer_sees_404_for_an_unknown_schedule_and_a_stranger_403(as_role, db) -> None:
    viewer = as_role("viewer")
    response = viewer.get("/schedules/nope")
    assert response.status_code == 404
    assert errors_of(response) == {None: "no schedule with code 'nope'"}
    assert as_role("stranger").get("/schedules/nope").status_code == 403
    assert viewer.get("/runs/999999").status_code == 404
    assert viewer.get("/runs/999999/output").status_code == 404


def test_an_unknown_endpoint_is_a_json_404(as_role, db) -> None:
    response = as_role("viewer").get("/nothing/here")
    assert response.status_code == 404
    assert "no API endpoint" in errors_of(response)[None]


@pytest.mark.parametrize("path", ["/schedules/nightly/pause/", "/nope", "/runs/-1/cancel"])
def test_a_token_clients_post_to_a_mistyped_path_is_a_json_404(schedule, path) -> None:
    """Not the CSRF middleware's HTML 403, which a token client never needs to pass."""
    issued = tokens.token_issue(user=api_member("script-owner", "Editors"), name="script")
    caller = Caller(
        Client(enforce_csrf_checks=True), {"HTTP_AUTHORIZATION": f"Bearer {issued.secret}"}
    )

    response = caller.post(path, {"x": 1})

    assert response.status_code == 404, response.content
    assert "no API endpoint" in errors_of(response)[None]
    assert Schedule.objects.get(code="nightly").status == "active"


def test_a_method_the_endpoint_lacks_is_a_json_405(as_role, schedule) -> None:
    response = as_role("editor", "token").call("PUT", "/schedules/nightly", {"kwargs": {}})
    assert response.status_code == 405
    assert errors_of(response)[None].startswith("PUT is not allowed here; allowed: ")
    assert set(response["Allow"].split(", ")) == {"GET", "PATCH", "DELETE"}
