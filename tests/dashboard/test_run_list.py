"""The runs page: every schedule's runs, filtered, newest first, cursor pages, live."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from schedules.events import publish_run
from schedules.models import Run, RunStatus
from schedules.run_filters import RunFilters, decode_cursor
from schedules.web.consumers import RunEventsConsumer
from tests.factories import every, make_schedule

from .conftest import member


def a_run(schedule, *, ago: float = 0, **fields) -> Run:
    defaults = {
        "schedule": schedule, "schedule_code": schedule.code, "task_name": schedule.task_name,
        "reason": "scheduled", "status": RunStatus.SUCCEEDED,
        "queued_at": timezone.now() - timedelta(seconds=ago),
    }  # fmt: skip
    return Run.objects.create(**{**defaults, **fields})


def ids_on(response) -> list[int]:
    return [run.pk for run in response.context["runs"]]


@pytest.fixture
def two(db):
    return (
        make_schedule("alpha", "test.echo", every(60)),
        make_schedule("beta", "test.fail", every(60)),
    )


@pytest.mark.django_db
class TestThePage:
    def test_it_needs_the_view_permission(self, client, stranger) -> None:
        client.force_login(stranger)
        assert client.get("/runs/").status_code == 403

    def test_runs_of_every_schedule_newest_first(self, client, viewer, two) -> None:
        alpha, beta = two
        old = a_run(alpha, ago=60)
        new = a_run(beta, ago=1, status=RunStatus.FAILED, error="RuntimeError: <boom>")
        client.force_login(viewer)
        response = client.get("/runs/")
        assert ids_on(response) == [new.pk, old.pk]
        html = response.content.decode()
        assert f'href="/runs/{new.pk}/"' in html
        assert "RuntimeError: &lt;boom&gt;" in html

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("status=failed", ["failed"]),
            ("status=errors", ["failed", "timed"]),
            ("status=succeeded&status=skipped", ["ok", "skipped", "manual"]),
            ("task=test.fail", ["failed", "timed"]),
            ("schedule=alpha", ["ok", "skipped", "manual"]),
            ("reason=manual", ["manual"]),
            ("window=1h", ["ok", "failed", "skipped", "manual"]),
            ("q=DISK", ["failed"]),
            ("status=errors&window=1h", ["failed"]),
        ],
    )
    def test_filters(self, client, viewer, two, query, expected) -> None:
        alpha, beta = two
        made = {
            "ok": a_run(alpha, ago=10),
            "failed": a_run(beta, ago=20, status=RunStatus.FAILED, error="OSError: disk full"),
            "timed": a_run(beta, ago=7200, status=RunStatus.TIMED_OUT, error="timed out"),
            "skipped": a_run(alpha, ago=30, status=RunStatus.SKIPPED, error="overlap"),
            "manual": a_run(alpha, ago=40, reason="manual"),
        }
        client.force_login(viewer)
        response = client.get(f"/runs/?{query}")
        names = {run.pk: name for name, run in made.items()}
        assert sorted(names[pk] for pk in ids_on(response)) == sorted(expected)

    def test_a_time_range_in_the_operators_zone(self, client, viewer, two) -> None:
        alpha, _ = two
        inside = a_run(alpha, queued_at=timezone.now().replace(year=2026, month=3, day=2, hour=10))
        a_run(alpha, queued_at=inside.queued_at - timedelta(days=1))
        client.force_login(viewer)
        client.cookies["tz"] = "UTC"
        response = client.get("/runs/?since=2026-03-02T00:00&until=2026-03-03T00:00")
        assert ids_on(response) == [inside.pk]

    def test_bad_values_are_ignored_and_named(self, client, viewer, two) -> None:
        alpha, _ = two
        run = a_run(alpha)
        client.force_login(viewer)
        response = client.get("/runs/?status=exploded&since=yesterday&window=9y&cursor=%%%")
        assert response.status_code == 200
        assert ids_on(response) == [run.pk]
        html = response.content.decode()
        assert "unknown status &#x27;exploded&#x27;" in html
        assert "since: not a date and time" in html
        assert "unknown time window" in html

    def test_a_date_without_a_utc_time_is_named_not_a_server_error(
        self, client, viewer, two
    ) -> None:
        run = a_run(two[0])
        client.force_login(viewer)
        response = client.get("/runs/?since=0001-01-01T00:00:00%2B05:00")
        assert response.status_code == 200
        assert ids_on(response) == [run.pk]
        assert "since: out of the range of dates" in response.content.decode()

    def test_cursor_pages_walk_every_run_once(self, client, viewer, two) -> None:
        alpha, _ = two
        moment = timezone.now()
        made = [a_run(alpha, queued_at=moment - timedelta(seconds=i // 3)) for i in range(120)]
        client.force_login(viewer)
        seen, url = [], "/runs/"
        while url:
            response = client.get(url)
            seen += ids_on(response)
            cursor = response.context["next_cursor"]
            url = f"/runs/?cursor={cursor}" if cursor else None
        expected = sorted(made, key=lambda r: (r.queued_at, r.pk), reverse=True)
        assert seen == [run.pk for run in expected]
        # A run recorded meanwhile never shifts the pages after the first.
        first = client.get("/runs/")
        cursor = first.context["next_cursor"]
        a_run(alpha)
        assert ids_on(client.get(f"/runs/?cursor={cursor}"))[0] == expected[50].pk

    def test_the_query_count_does_not_grow_with_the_runs(self, client, viewer, two) -> None:
        alpha, beta = two
        client.force_login(viewer)
        a_run(alpha)
        with CaptureQueriesContext(connection) as few:
            client.get("/runs/")
        for i in range(60):
            a_run(alpha if i % 2 else beta, error="x" * 50, status=RunStatus.FAILED)
        for url in ("/runs/", "/runs/?status=errors&task=test.echo", "/runs/?cursor=" + "x"):
            with CaptureQueriesContext(connection) as many:
                client.get(url)
            assert len(many.captured_queries) == len(few.captured_queries), url
        # One of them reads runs; the rest are the session, the user and permissions.
        assert sum("schedules_run" in q["sql"] for q in few.captured_queries) == 1

    def test_the_list_never_reads_output_or_tracebacks(self, two) -> None:
        query = str(RunFilters().queryset().query)
        assert "traceback" not in query and "result" not in query and "kwargs" not in query


def plan(queryset) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return " ".join(str(row) for row in cursor.fetchall())


@pytest.mark.sqlite  # SQLite's plan; PostgreSQL proves partial-index conditions itself
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "index"),
    [
        ({}, "run_recent_idx"),
        ({"task": "test.echo"}, "run_task_recent_idx"),
        ({"schedule": "alpha"}, "run_code_recent_idx"),
        ({"status": "errors"}, "run_problem_idx"),
        ({"window": "1h"}, "run_recent_idx"),
        ({"reason": "manual"}, "run_unscheduled_idx"),
        ({"reason": "scheduled"}, "run_recent_idx"),
    ],
)
def test_each_filter_reads_an_index_in_page_order(params, index) -> None:
    filters = RunFilters.from_params(params, now=timezone.now())
    text = plan(filters.queryset()[:51])
    assert index in text
    assert "TEMP B-TREE" not in text  # no sort of the matching rows


def test_a_cursor_survives_a_round_trip_and_junk_is_refused() -> None:
    assert decode_cursor("not-a-cursor") is None
    assert decode_cursor("") is None


# ---------------------------------------------------------------- live


@pytest.mark.django_db(transaction=True)
async def test_new_matching_runs_go_on_top_and_shown_rows_update() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    alpha = await sync_to_async(make_schedule)("alpha", "test.echo", every(60))
    shown = await sync_to_async(a_run)(alpha, status=RunStatus.RUNNING)
    comm = WebsocketCommunicator(
        RunEventsConsumer.as_asgi(),
        f"/ws/runs/?view=runs&after={shown.pk}&rows={shown.pk}&status=errors&status=running",
    )
    comm.scope["user"] = viewer
    assert (await comm.connect())[0]
    ignored = await sync_to_async(a_run)(alpha, status=RunStatus.SUCCEEDED)
    await publish_run(ignored)  # does not match: nothing
    failed = await sync_to_async(a_run)(alpha, status=RunStatus.FAILED, error="bad <x>")
    await publish_run(failed)
    html = await comm.receive_from(timeout=2)
    assert html.startswith('<tbody hx-swap-oob="afterbegin:#run-rows">')
    assert f'id="runrow-{failed.pk}"' in html and "bad &lt;x&gt;" in html
    await publish_run(failed)  # already on top: updated in place, not added twice
    html = await comm.receive_from(timeout=2)
    assert f'<tr id="runrow-{failed.pk}" class="run-row" hx-swap-oob="true">' in html
    shown.status = RunStatus.SUCCEEDED  # a row on the page changes: it is updated
    await sync_to_async(shown.save)()
    await publish_run(shown)
    html = await comm.receive_from(timeout=2)
    assert f'id="runrow-{shown.pk}"' in html and "s-succeeded" in html
    assert await comm.receive_nothing(timeout=0.2)
    await comm.disconnect()


@pytest.mark.sqlite  # SQLite's plan; PostgreSQL proves partial-index conditions itself
@pytest.mark.django_db
def test_a_rows_run_now_state_reads_only_the_runs_in_flight() -> None:
    """Every list row and schedule page asks for its schedule's newest queued or running
    run; with retention raised a schedule keeps 100,000 runs, which must not be read."""
    from schedules.selectors import active_runs

    for page in ([1], [1, 2]):  # a schedule page, a list page
        with CaptureQueriesContext(connection) as captured:
            active_runs(page)
        (query,) = captured.captured_queries
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
            text = " ".join(str(row) for row in cursor.fetchall())
        assert "run_running_idx" in text and "run_queued_schedule_idx" in text, text
        assert "run_history_idx" not in text, text


@pytest.mark.django_db
def test_a_rows_run_now_state_is_its_newest_run_in_flight() -> None:
    from schedules.selectors import active_runs

    one = make_schedule("one", "test.echo", every(60))
    two = make_schedule("two", "test.echo", every(60))
    idle = make_schedule("idle", "test.echo", every(60))
    now = timezone.now()

    def run(schedule, status: str, minutes_ago: int) -> Run:
        return Run.objects.create(
            schedule=schedule, schedule_code=schedule.code, task_name="test.echo",
            reason="manual", status=status, queued_at=now - timedelta(minutes=minutes_ago),
        )  # fmt: skip

    run(one, RunStatus.RUNNING, 5)
    newest_one = run(one, RunStatus.QUEUED, 1)
    newest_two = run(two, RunStatus.RUNNING, 2)
    run(two, RunStatus.QUEUED, 3)
    run(two, RunStatus.SUCCEEDED, 0)  # finished: not in flight
    run(idle, RunStatus.FAILED, 0)
    found = active_runs([one.pk, two.pk, idle.pk])
    assert {pk: r.pk for pk, r in found.items()} == {one.pk: newest_one.pk, two.pk: newest_two.pk}
