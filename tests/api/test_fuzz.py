"""Hostile and random bodies for create and preview: always a 2xx or a 4xx naming a
field in the one error shape, never a 5xx."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedules.models import Schedule

from .conftest import api_member, token_caller

pytestmark = pytest.mark.slow

junk = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8,
)  # fmt: skip
zones = st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Mars/Base", "", "utc"])
cron_fields = st.sampled_from(["*", "0", "*/5", "1-5", "L", "5L", "2#3", "15W", "?", "99",
                               "MON-FRI", "JAN", "-", "*/0", "1,2,,3"])  # fmt: skip
crons = st.one_of(
    st.lists(cron_fields, min_size=1, max_size=7).map(" ".join),
    st.sampled_from(["@daily", "@hourly", "@never", "0 0 30 2 *"]),
    st.text(max_size=30),
)
numbers = st.one_of(st.integers(min_value=-10, max_value=10**12), st.floats(), st.text(max_size=5))
times = st.one_of(st.sampled_from(["2027-01-01T09:00", "2027-01-01T09:00:00+02:00",
                                   "2020-01-01T00:00Z", "yesterday", ""]), junk)  # fmt: skip


def _spec(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.fixed_dictionaries({"kind": st.just("cron"), "expression": crons},
                              optional={"tz": zones | junk}),
        st.fixed_dictionaries({"kind": st.just("interval"), "every": numbers},
                              optional={"jitter": numbers, "anchor": times, "seed": junk}),
        st.fixed_dictionaries({"kind": st.just("date"), "at": times}, optional={"tz": zones}),
        st.fixed_dictionaries({"kind": st.just("compound"),
                               "mode": st.sampled_from(["any", "all", "most"]),
                               "children": st.lists(children, max_size=3)}),
        st.dictionaries(st.sampled_from(["kind", "expression", "every", "at", "mode"]), junk),
    )  # fmt: skip


hostile_specs = st.recursive(_spec(junk), _spec, max_leaves=6)
# Mostly well-formed specs, so that the engine, not only the schema, meets the input.
good_crons = st.sampled_from(["0 9 * * 1-5", "*/15 * * * *", "0 0 L * *", "0 12 * * 5L",
                              "30 2 * * *", "0 0 29 2 *", "0 9 1-7 * MON", "@weekly"])  # fmt: skip
good_zones = st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"])
leaf_specs = st.one_of(
    st.builds(lambda e, z: {"kind": "cron", "expression": e, "tz": z}, good_crons, good_zones),
    st.builds(lambda n: {"kind": "interval", "every": n},
              st.sampled_from([1, 60, 3600, 86400.5, 0.5, 10**12])),
    st.builds(lambda a, z: {"kind": "date", "at": a, "tz": z},
              st.sampled_from(["2030-01-01T09:00", "2031-06-01T00:30:00+02:00"]), good_zones),
)  # fmt: skip
good_specs = st.recursive(
    leaf_specs,
    lambda children: st.builds(lambda m, c: {"kind": "compound", "mode": m, "children": c},
                               st.sampled_from(["any", "all"]),
                               st.lists(children, min_size=1, max_size=3)),
    max_leaves=5,
)  # fmt: skip
specs = good_specs | hostile_specs
options = st.dictionaries(
    st.sampled_from(["timeout", "max_attempts", "retry_delay", "max_instances", "overlap",
                     "misfire", "misfire_grace", "priority", "dispatch", "bogus"]),
    st.one_of(numbers, st.sampled_from(["skip", "replace", "once", "all", "inline", "enqueue"]),
              st.none(), st.booleans()),
)  # fmt: skip
near_valid_bodies = st.fixed_dictionaries(
    {
        "code": st.from_regex(r"\A[a-z][a-z0-9-]{0,20}\Z"),
        "task_name": st.sampled_from(["test.echo", "test.fail", "test.every_hour"]),
        "trigger": good_specs,
    },
    optional={
        "kwargs": st.dictionaries(st.sampled_from(["message", "region", "x"]), junk, max_size=2),
        "tz": good_zones,
        "options": options,
    },
)
create_bodies = (
    near_valid_bodies
    | st.fixed_dictionaries(
        {},
        optional={
            "code": st.one_of(st.sampled_from(["fuzzed", "fuzzed-2"]), st.text(max_size=12), junk),
            "task_name": st.one_of(st.sampled_from(["test.echo", "test.fail", "no.such"]), junk),
            "trigger": st.one_of(specs, junk),
            "kwargs": st.one_of(st.dictionaries(st.text(max_size=6), junk, max_size=3), junk),
            "tz": st.one_of(zones, junk),
            "options": st.one_of(options, junk),
        },
    )
    | junk
)
preview_bodies = (
    st.fixed_dictionaries(
        {"trigger": st.one_of(specs, junk)},
        optional={
            "tz": st.one_of(zones, junk),
            "count": st.one_of(st.integers(min_value=-5, max_value=200), junk),
            "after": times,
        },
    )
    | junk
)

FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _post(api, path: str, body: object):
    # json.dumps writes NaN and Infinity, which Python's JSON parser reads back: hostile input.
    return api.client.post(f"/api/v1{path}", data=json.dumps(body),
                           content_type="application/json", **api.headers)  # fmt: skip


def _assert_answer(response, ok: set[int]) -> None:
    assert response.status_code < 500, response.content
    if response.status_code in ok:
        return
    assert response.status_code in (400, 409, 422), response.content
    body = response.json()
    assert set(body) == {"code", "message", "errors"}
    assert body["errors"] and all(isinstance(e["message"], str) for e in body["errors"])


@pytest.fixture
def editor_api(db):
    return token_caller(api_member("fuzzer", "Editors"))


@FUZZ
@given(body=create_bodies)
def test_create_never_fails_with_a_server_error(editor_api, settings, body) -> None:
    settings.SILLO_API_THROTTLE = None
    response = _post(editor_api, "/schedules", body)
    _assert_answer(response, {201})
    if response.status_code == 201:
        assert Schedule.objects.filter(code=response.json()["code"]).exists()


@FUZZ
@given(body=preview_bodies)
def test_preview_never_fails_with_a_server_error(editor_api, settings, body) -> None:
    settings.SILLO_API_THROTTLE = None
    _assert_answer(_post(editor_api, "/triggers/preview", body), {200})
