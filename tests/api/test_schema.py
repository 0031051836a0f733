"""The OpenAPI document: valid, complete, following the mount prefix; and its docs page."""

from __future__ import annotations

import pytest
from django.test import Client
from openapi_spec_validator import validate

from .conftest import api_member, session_caller, token_caller

OPERATIONS = {
    ("get", "/api/v1/schedules"), ("post", "/api/v1/schedules"),
    ("get", "/api/v1/schedules/{code}"), ("patch", "/api/v1/schedules/{code}"),
    ("delete", "/api/v1/schedules/{code}"),
    ("post", "/api/v1/schedules/{code}/pause"), ("post", "/api/v1/schedules/{code}/resume"),
    ("post", "/api/v1/schedules/{code}/cancel"), ("post", "/api/v1/schedules/{code}/reset"),
    ("post", "/api/v1/schedules/{code}/reactivate"),
    ("post", "/api/v1/schedules/{code}/run"),
    ("get", "/api/v1/runs"), ("get", "/api/v1/runs/{run_id}"),
    ("get", "/api/v1/runs/{run_id}/output"),
    ("post", "/api/v1/runs/{run_id}/cancel"),
    ("get", "/api/v1/tasks"), ("post", "/api/v1/triggers/preview"), ("get", "/api/v1/stats"),
}  # fmt: skip


@pytest.fixture
def schema(db) -> dict:
    response = token_caller(api_member("reader")).get("/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_the_schema_is_valid_openapi(schema) -> None:
    validate(schema)
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Sillo Dash API"


def test_the_schema_lists_every_operation_with_its_errors(schema) -> None:
    found = {(method, path) for path, item in schema["paths"].items() for method in item}
    assert found == OPERATIONS
    bodies = {
        ("post", "/api/v1/schedules"), ("patch", "/api/v1/schedules/{code}"),
        ("post", "/api/v1/schedules/{code}/run"), ("post", "/api/v1/triggers/preview"),
    }  # fmt: skip
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            answers = set(operation["responses"])
            assert {"400", "401", "403", "429", "503"} <= answers, (method, path)
            assert ("413" in answers) == ((method, path) in bodies), (method, path)
            assert operation["security"], (method, path)
    assert {"BearerToken", "DashboardSession"} <= set(schema["components"]["securitySchemes"])


def test_the_schema_carries_the_option_limits(schema) -> None:
    options = schema["components"]["schemas"]["OptionsIn"]["properties"]
    assert options["max_attempts"]["minimum"] == 1
    assert options["max_attempts"]["maximum"] == 100


def test_the_api_and_its_schema_follow_the_mount_prefix(db, settings) -> None:
    settings.ROOT_URLCONF = "tests.api.prefixed_urls"
    api = token_caller(api_member("reader", "Viewers"))
    response = api.client.get("/ops/scheduler/api/v1/openapi.json", **api.headers)
    assert response.status_code == 200
    validate(response.json())
    assert "/ops/scheduler/api/v1/schedules" in response.json()["paths"]
    stats = api.client.get("/ops/scheduler/api/v1/stats", **api.headers)
    assert stats.status_code == 200
    docs = session_caller(api_member("reader2")).client.get("/ops/scheduler/api/v1/docs/")
    assert b'"/ops/scheduler/api/v1/openapi.json"' in docs.content
    assert b"/ops/scheduler/api/v1/docs/assets/swagger-ui-bundle.js" in docs.content


def test_the_docs_page_renders_swagger_from_the_package(db) -> None:
    client = session_caller(api_member("reader")).client
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    assert b'id="swagger-ui"' in page.content
    assert b"data-csrf-token=" in page.content
    for name, kind in [("swagger-ui-bundle.js", "text/javascript"),
                       ("swagger-ui.css", "text/css")]:  # fmt: skip
        asset = client.get(f"/api/v1/docs/assets/{name}")
        assert asset.status_code == 200 and asset["Content-Type"] == kind
        assert len(b"".join(asset.streaming_content)) > 1000
    assert client.get("/api/v1/docs/assets/secrets.py").status_code == 404


def test_the_docs_page_asks_an_anonymous_visitor_to_log_in(db) -> None:
    response = Client().get("/api/v1/docs/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
