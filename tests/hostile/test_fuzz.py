"""Property-based fuzzing of every input a user controls: no 5xx, no traceback, bounded
work and size. Work is counted (the timing engine's search steps), never timed."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedules.web.consumers import RunEventsConsumer
from tests.factories import every, make_schedule

from .conftest import HX, login_as, member

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MAX_BODY = 200_000
# One parse of the whole tree and one preview, each within the default search budget.
MAX_STEPS = 2 * 2_000 + 200

# Text with what broke things before: Unicode digits, huge numbers, odd dates, control chars.
odd_numbers = st.sampled_from(["²", "١٢", "9" * 5000, "1e309", "-0", "nan", "inf", "0x10",
                               "99999999999999999999", "-1", "", " ", "1" * 19])  # fmt: skip
odd_dates = st.sampled_from(["0001-01-01T00:00", "9999-12-31T23:59", "2026-03-29T02:30",
                             "2026-13-01T00:00", "0001-01-01T00:00:00+05:00"])  # fmt: skip
crons = st.sampled_from(["0 ² * * *", "*/0 * * * *", "0 0 30 2 *", "@yearly", "L * * * *",
                         "0 9 * * MON", "0 9 * * TUE", "* * * * *", "0 0 29 2 1"])  # fmt: skip
zones = st.sampled_from(["UTC", "Europe", "Europe/Berlin", "../etc", "", "Etc/GMT+12"])
free_text = st.text(max_size=300)
values = st.one_of(odd_numbers, odd_dates, crons, zones, free_text)
kinds = st.sampled_from(["cron", "interval", "date", "any", "all", "weekly", ""])
prefixes = st.lists(st.integers(0, 25), max_size=9).map(
    lambda path: "t" + "".join(f"-{i}" for i in path)
)
names = st.sampled_from(["kind", "count", "every", "unit", "jitter", "anchor", "expression",
                         "tz", "at", "op"])  # fmt: skip
builder_posts = st.dictionaries(
    st.tuples(prefixes, names).map(lambda pair: f"{pair[0]}-{pair[1]}"),
    st.one_of(kinds, values, st.integers(-5, 40).map(str)),
    max_size=120,
)


def assert_answer_is_clean(response) -> None:
    assert response.status_code < 500
    body = response.content
    assert len(body) < MAX_BODY
    assert b"Traceback (most recent call last)" not in body


@pytest.fixture
def viewer_client(db) -> Client:
    return login_as(Client(), "viewer")


@pytest.fixture
def editor_client(db) -> Client:
    return login_as(Client(), "editor")


@FUZZ
@given(fields=builder_posts)
def test_fuzzed_preview_requests(viewer_client, steps, fields) -> None:
    steps[0] = 0
    assert_answer_is_clean(viewer_client.post("/schedules/preview/", fields, **HX))
    assert steps[0] <= MAX_STEPS


@FUZZ
@given(fields=builder_posts, op=st.one_of(st.sampled_from(["add:t", "remove:t-0", "kind:t"]),
                                          free_text))  # fmt: skip
def test_fuzzed_builder_requests(viewer_client, steps, fields, op) -> None:
    steps[0] = 0
    fields = {**fields, "op": op}
    assert_answer_is_clean(viewer_client.post("/schedules/trigger-editor/", fields, **HX))
    assert steps[0] <= MAX_STEPS


json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20)
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),  # fmt: skip
    max_leaves=30,
)
kwargs_texts = st.one_of(
    json_values.map(json.dumps),
    st.sampled_from(
        [
            '{"x": NaN}',
            '{"x": "\\ud800"}',
            "[" * 5000,
            '{"x": ' + "9" * 5000 + "}",
            '{"a": "\\u0000"}',
            '{"region": "eu"}',
            "{}",
        ]
    ),  # fmt: skip
    free_text,
)


@FUZZ
@given(kwargs=kwargs_texts, fields=builder_posts, task=st.sampled_from(["test.echo", "test.fail",
                                                                        "nope", ""]))  # fmt: skip
def test_fuzzed_create_and_edit(editor_client, steps, kwargs, fields, task) -> None:
    steps[0] = 0
    form = {"code": "fuzz", "task_name": task, "kwargs": kwargs, "max_attempts": "1",
            "retry_delay": "10", "max_instances": "1", "overlap": "skip", "misfire": "skip",
            "misfire_grace": "60", "priority": "0", **fields}  # fmt: skip
    assert_answer_is_clean(editor_client.post("/schedules/new/", form))
    schedule = make_schedule_once()
    assert_answer_is_clean(editor_client.post(f"/schedules/{schedule.pk}/edit/", form))
    assert_answer_is_clean(editor_client.get(f"/schedules/{schedule.pk}/"))
    assert_answer_is_clean(editor_client.get("/"))
    assert steps[0] <= 4 * MAX_STEPS  # create and edit, each parsed and shown


def make_schedule_once():
    from schedules.models import Schedule

    found = Schedule.objects.filter(code="target").first()
    return found or make_schedule("target", "test.echo", every(60))


ids = st.one_of(odd_numbers, st.integers().map(str), free_text)


@pytest.fixture
def operator_client(db) -> Client:
    return login_as(Client(), "operator")


@FUZZ
@given(action=st.one_of(st.sampled_from(["pause", "resume", "cancel", "run"]), free_text),
       selected=st.lists(ids, max_size=30))  # fmt: skip
def test_fuzzed_bulk_actions(operator_client, action, selected) -> None:
    make_schedule_once()
    response = operator_client.post("/schedules/bulk/", {"action": action, "selected": selected})
    assert_answer_is_clean(response)


@FUZZ
@given(schedule=ids, page=ids, flag=st.one_of(st.sampled_from(["invalid", "kwargs"]), free_text),
       status=free_text, q=free_text)  # fmt: skip
def test_fuzzed_live_log_list_and_pagination(viewer_client, schedule, page, flag, status, q):
    assert_answer_is_clean(viewer_client.get("/live/", {"schedule": schedule}))
    assert_answer_is_clean(
        viewer_client.get("/", {"page": page, "flag": flag, "status": status, "q": q})
    )


# What can travel in a header: bytes, read by Django as Latin-1 text.
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=255,
                                    exclude_characters=';"\\'), max_size=80)  # fmt: skip


@FUZZ
@given(cookie=st.one_of(zones, header_text), auth=header_text)
def test_fuzzed_cookies_and_headers(db, cookie, auth) -> None:
    client = Client()
    client.cookies["tz"] = cookie
    assert_answer_is_clean(client.get("/login/"))
    # /health/ answers 503 on purpose when no scheduler is alive: its JSON says why.
    health = client.get("/health/", HTTP_AUTHORIZATION=auth)
    assert health.status_code in (200, 503) and set(health.json()) == {"status", "problems"}
    assert_answer_is_clean(client.get("/metrics", HTTP_AUTHORIZATION=auth))


query_parts = st.dictionaries(
    st.sampled_from(["view", "schedule", "schedules", "since", "after", "x"]),
    st.one_of(ids, odd_dates, st.lists(ids, max_size=5).map(",".join)),
    max_size=6,
)


@pytest.fixture
def ws_viewer(transactional_db):
    return member("wsviewer", "Viewers")


@FUZZ
@given(query=query_parts, raw=st.binary(max_size=60))
def test_fuzzed_websocket_queries(ws_viewer, query, raw) -> None:
    viewer = ws_viewer
    text = "&".join(f"{k}={quote(v)}" for k, v in query.items())

    async def connect(path: str) -> None:
        comm = WebsocketCommunicator(RunEventsConsumer.as_asgi(), path)
        comm.scope["user"] = viewer
        connected, _ = await comm.connect()
        assert connected
        await comm.disconnect()

    async_to_sync(connect)(f"/ws/runs/?{text}")
    comm_path = "/ws/runs/"

    async def raw_query() -> None:
        comm = WebsocketCommunicator(RunEventsConsumer.as_asgi(), comm_path)
        comm.scope["user"] = viewer
        comm.scope["query_string"] = raw
        connected, _ = await comm.connect()
        assert connected
        await comm.disconnect()

    async_to_sync(raw_query)()


spec_values = st.recursive(
    st.one_of(json_leaves, crons, odd_dates, zones, kinds),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.fixed_dictionaries(
            {"kind": st.sampled_from(["compound", "cron", "interval", "date"])},
            optional={
                "mode": st.sampled_from(["any", "all", "x"]),
                "children": st.lists(inner, max_size=4),
                "expression": crons,
                "tz": zones,
                "every": st.one_of(st.integers(), st.floats()),
                "at": odd_dates,
                "seed": free_text,
            },
        )
    ),  # fmt: skip
    max_leaves=25,
)


@FUZZ
@given(spec=st.one_of(spec_values.map(json.dumps), free_text))
def test_fuzzed_cli_preview_spec(db, steps, spec) -> None:
    steps[0] = 0
    try:
        call_command("schedules", "preview", "--spec", spec, "-n", "5")
    except CommandError as exc:
        assert "\n" not in str(exc) and "Traceback" not in str(exc)
    assert steps[0] <= MAX_STEPS


def _tree_fields(tree, prefix: str = "t") -> dict[str, str]:
    if isinstance(tree, tuple):
        mode, children = tree
        fields = {f"{prefix}-kind": mode, f"{prefix}-count": str(len(children))}
        for i, child in enumerate(children):
            fields.update(_tree_fields(child, f"{prefix}-{i}"))
        return fields
    return {f"{prefix}-kind": "cron", f"{prefix}-expression": tree, f"{prefix}-tz": "Europe/Berlin"}


trees = st.recursive(
    crons,
    lambda inner: st.tuples(
        st.sampled_from(["any", "all"]), st.lists(inner, min_size=1, max_size=25)
    ),  # fmt: skip
    max_leaves=80,
).map(_tree_fields)


@FUZZ
@given(fields=trees, path=st.sampled_from(["/schedules/preview/", "/schedules/trigger-editor/"]))
def test_fuzzed_trigger_trees_in_the_builder(viewer_client, steps, fields, path) -> None:
    steps[0] = 0
    assert_answer_is_clean(viewer_client.post(path, fields, **HX))
    assert steps[0] <= MAX_STEPS
