"""Hostile input the API must answer without a 500: an offset past the database's integer
range, and a stored record written around the API (its trigger or kwargs not an object)."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from openapi_spec_validator import validate

from schedules import services
from schedules.models import Run, Schedule
from tests.factories import every, make_schedule

from .conftest import api_member, errors_of, token_caller

MAX_OFFSET = 1_000_000_000


def plant(row: Schedule | Run, column: str, raw: str) -> None:
    """Writes `raw` into the column as a bad migration or a manual edit would: no checks."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(row._meta.db_table)} SET {quote(column)} = %s WHERE id = %s",
            [raw, row.pk],
        )


@pytest.mark.parametrize("offset", [2**63, 10**20, MAX_OFFSET + 1])
def test_an_offset_past_the_bound_is_a_422_naming_offset(as_role, db, offset: int) -> None:
    make_schedule("good", "test.echo", every(60))
    api = as_role("viewer", "token")

    response = api.get(f"/schedules?offset={offset}")
    assert response.status_code == 422, response.content
    assert response.json()["code"] == "invalid"
    assert set(errors_of(response)) == {"offset"}

    # The bound itself is an (empty) page, and the list is unaffected.
    last = api.get(f"/schedules?offset={MAX_OFFSET}")
    assert last.status_code == 200
    assert last.json() == {"count": 1, "results": []}
    assert [s["code"] for s in api.get("/schedules").json()["results"]] == ["good"]


# (column, what is stored): never an object, as the API and the dashboard write them.
DAMAGED = {
    "list-trigger": ("trigger", '["cron", "* * * * *"]'),
    "string-trigger": ("trigger", '"0 9 * * *"'),
    "null-trigger": ("trigger", "null"),
    "deep-trigger": ("trigger", "[" * 990 + "]" * 990),
    "list-kwargs": ("kwargs", "[1, 2, 3]"),
    "number-kwargs": ("kwargs", "42"),
    "null-kwargs": ("kwargs", "null"),
}


def as_stored(value: object, raw: str) -> bool:
    # Nesting too deep for the server's decoder comes back as the column's text.
    return value == json.loads(raw) or value == raw


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_schedule_lists_and_shows_as_stored_and_the_others_still_list(
    as_role, db, case: str
) -> None:
    column, raw = DAMAGED[case]
    make_schedule("a-good", "test.echo", every(60), kwargs={"x": 1})
    plant(make_schedule("b-bad", "test.echo", every(60)), column, raw)
    make_schedule("c-good", "test.echo", every(120))
    api = as_role("viewer", "token")

    response = api.get("/schedules")
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    assert body["count"] == 3
    by_code = {s["code"]: s for s in body["results"]}
    assert list(by_code) == ["a-good", "b-bad", "c-good"]
    assert as_stored(by_code["b-bad"][column], raw)
    assert by_code["a-good"]["trigger"]["kind"] == "interval"
    assert by_code["a-good"]["kwargs"] == {"x": 1}
    assert by_code["c-good"]["trigger"]["every"] == 120

    show = api.get("/schedules/b-bad")
    assert show.status_code == 200, show.content[:500]
    assert as_stored(show.json()[column], raw)


@pytest.mark.parametrize("case", ["list-kwargs", "number-kwargs", "null-kwargs"])
def test_a_run_with_damaged_kwargs_shows_as_stored_and_lists(as_role, db, case: str) -> None:
    _, raw = DAMAGED[case]
    schedule = make_schedule("nightly", "test.echo", every(60))
    good = services.schedule_run_now(schedule=schedule)
    bad = services.schedule_run_now(schedule=schedule)
    plant(bad, "kwargs", raw)
    api = as_role("operator", "token")

    response = api.get(f"/runs/{bad.pk}")
    assert response.status_code == 200, response.content[:500]
    assert as_stored(response.json()["kwargs"], raw)
    assert api.get(f"/runs/{good.pk}").json()["kwargs"] == {}
    listed = api.get("/runs")
    assert listed.status_code == 200
    assert [r["id"] for r in listed.json()["results"]] == [bad.pk, good.pk]

    # Cancelling answers with the same body: the damage must not undo a done cancel.
    cancelled = api.post(f"/runs/{bad.pk}/cancel")
    assert cancelled.status_code == 200, cancelled.content[:500]
    assert cancelled.json()["status"] == "cancelled"
    assert as_stored(cancelled.json()["kwargs"], raw)


def test_the_schema_admits_any_stored_value_and_bounds_offset(db) -> None:
    response = token_caller(api_member("reader")).get("/openapi.json")
    schema = response.json()
    validate(schema)
    parts = schema["components"]["schemas"]
    for model, field in [("ScheduleOut", "trigger"), ("ScheduleOut", "kwargs"),
                         ("RunDetailOut", "kwargs")]:  # fmt: skip
        prop = parts[model]["properties"][field]
        assert "type" not in prop and "$ref" not in prop, (model, field, prop)
        assert "returned as stored" in prop["description"]
        assert field in parts[model]["required"]
    (offset,) = [p for p in schema["paths"]["/api/v1/schedules"]["get"]["parameters"]
                 if p["name"] == "offset"]  # fmt: skip
    assert (offset["schema"]["minimum"], offset["schema"]["maximum"]) == (0, MAX_OFFSET)
