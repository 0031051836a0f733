"""The schedule page, create and edit with the trigger builder, tasks page, live log, admin."""

from __future__ import annotations

import json

import pytest

from schedules.models import Run, RunStatus, Schedule
from tests.factories import every, make_schedule

from .conftest import HX

pytestmark = pytest.mark.django_db


def test_the_schedule_page_shows_spec_times_chart_and_escaped_tracebacks(
    client, viewer, schedule
) -> None:
    Run.objects.create(
        schedule=schedule, schedule_code="nightly", task_name="test.echo", reason="scheduled",
        status=RunStatus.FAILED, error="ValueError: <script>alert(1)</script>",
        traceback="Traceback ...\n<script>alert(1)</script>",
        started_at=schedule.created_at, finished_at=schedule.created_at,
    )  # fmt: skip
    client.force_login(viewer)
    response = client.get(f"/schedules/{schedule.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("03:00:00") >= 10  # next fire times
    assert '<svg class="chart"' in html and 'class="bar s-failed"' in html
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_run_history_pages_by_cursor_with_the_same_queries_at_any_depth(
    client, viewer, schedule
) -> None:
    """Older pages follow a cursor (no count of the schedule's runs, no OFFSET), a run
    recorded meanwhile shifts no page, and the fragment htmx asks for is the table."""
    from datetime import timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from schedules.bulk import insert_rows
    from schedules.scheduler.records import new_run

    start = schedule.created_at
    insert_rows([new_run(schedule, reason="manual", slot=None, now=start + timedelta(minutes=i))
                 for i in range(60)])  # fmt: skip
    newest = sorted(Run.objects.values_list("pk", flat=True), reverse=True)
    client.force_login(viewer)
    html = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert f'id="run-{newest[0]}"' in html and f'id="run-{newest[24]}"' in html
    assert f'id="run-{newest[25]}"' not in html and "Newest first" in html
    seen, cursor, reads = [], None, []
    for _ in range(5):
        url = f"/schedules/{schedule.pk}/?cursor={cursor or ''}"
        with CaptureQueriesContext(connection) as queries:
            page = client.get(url, **HX)
        body = page.content.decode()
        assert body.lstrip().startswith('<div id="history">')
        seen += [pk for pk in newest if f'id="run-{pk}"' in body]
        reads.append(len(queries))
        assert not any("COUNT(" in q["sql"] or "OFFSET" in q["sql"] for q in queries)
        if cursor is None:  # a newer run recorded after the first page shifts no page
            later = start + timedelta(hours=2)
            insert_rows([new_run(schedule, reason="manual", slot=None, now=later)])
        marker = 'data-testid="older">'
        if marker not in body:
            break
        cursor = body.split('href="?cursor=')[1].split('"')[0]
    assert seen == newest  # every run once, newest first, over pages of 25, 25 and 10
    assert len(set(reads)) == 1
    assert "« Newest" in body


def test_an_unknown_schedule_is_404(client, viewer) -> None:
    client.force_login(viewer)
    assert client.get("/schedules/999/").status_code == 404


def test_create_needs_the_add_permission(client, operator) -> None:
    client.force_login(operator)
    assert client.get("/schedules/new/").status_code == 403
    assert client.post("/schedules/new/", {"code": "x"}).status_code == 403


def form(**fields: str) -> dict:
    data = {
        "code": "weekday-report", "task_name": "test.echo", "kwargs": '{"region": "eu"}',
        "tz": "", "timeout": "", "max_attempts": "1", "retry_delay": "10", "max_instances": "1",
        "overlap": "skip", "misfire": "skip", "misfire_grace": "60", "priority": "0",
        "t-kind": "cron", "t-expression": "0 9 * * 1-5", "t-tz": "Europe/Berlin",
    }  # fmt: skip
    data.update(fields)
    return data


def test_create_a_cron_schedule(client, editor) -> None:
    client.force_login(editor)
    response = client.post("/schedules/new/", form())
    schedule = Schedule.objects.get(code="weekday-report")
    assert response.status_code == 302
    assert response["Location"] == f"/schedules/{schedule.pk}/"
    assert schedule.trigger == {"kind": "cron", "expression": "0 9 * * 1-5", "tz": "Europe/Berlin"}
    assert schedule.tz == "Europe/Berlin"
    assert schedule.kwargs == {"region": "eu"}
    assert schedule.next_run_at is not None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"t-expression": "0 9 * * 8"}, "day-of-week 8 is out of range 0-7"),
        ({"t-tz": "Europe/Berln"}, "unknown time zone &#x27;Europe/Berln&#x27;"),
        ({"kwargs": "{oops"}, "not valid JSON"),
        ({"kwargs": "[1, 2]"}, "must be a JSON object"),
        ({"task_name": "test.fail", "kwargs": '{"nope": 1}'}, "does not fit test.fail"),
        ({"code": "has spaces"}, "Use letters, digits and . _ : - only"),
        ({"t-kind": "interval", "t-every": "0", "t-unit": "minutes"}, "every must be positive"),
        ({"t-kind": "all", "t-count": "0"}, "needs at least one trigger inside"),
    ],
)
def test_bad_input_gets_field_errors_and_keeps_what_was_typed(client, editor, fields, message):
    client.force_login(editor)
    response = client.post("/schedules/new/", form(**fields))
    assert response.status_code == 422
    html = response.content.decode()
    assert message in html
    assert 'value="weekday-report"' in html or "has spaces" in html
    assert not Schedule.objects.exists()


def test_create_a_nested_compound_schedule(client, editor) -> None:
    client.force_login(editor)
    fields = {
        "t-kind": "any", "t-count": "2",
        "t-0-kind": "all", "t-0-count": "2",
        "t-0-0-kind": "cron", "t-0-0-expression": "*/15 * * * *", "t-0-0-tz": "UTC",
        "t-0-1-kind": "cron", "t-0-1-expression": "* 9-17 * * 1-5", "t-0-1-tz": "UTC",
        "t-1-kind": "interval", "t-1-every": "2", "t-1-unit": "hours", "t-1-jitter": "30",
    }  # fmt: skip
    data = form(**fields)
    del data["t-expression"], data["t-tz"]
    response = client.post("/schedules/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    trigger = Schedule.objects.get().trigger
    assert trigger["mode"] == "any"
    assert trigger["children"][0]["mode"] == "all"
    assert trigger["children"][1]["every"] == 7200.0
    assert trigger["children"][1]["seed"] == "weekday-report"


def test_the_builder_adds_and_removes_children_keeping_values(client, editor) -> None:
    client.force_login(editor)
    added = client.post(
        "/schedules/trigger-editor/",
        {"t-kind": "any", "t-count": "1", "t-0-kind": "cron", "t-0-expression": "5 4 * * *",
         "op": "add:t"},
        **HX,
    )  # fmt: skip
    html = added.content.decode()
    assert 'name="t-1-kind"' in html and 'value="5 4 * * *"' in html
    removed = client.post(
        "/schedules/trigger-editor/",
        {"t-kind": "any", "t-count": "2", "t-0-kind": "cron", "t-0-expression": "5 4 * * *",
         "t-1-kind": "cron", "t-1-expression": "7 7 * * *", "op": "remove:t-0"},
        **HX,
    )  # fmt: skip
    html = removed.content.decode()
    assert 'value="7 7 * * *"' in html and "5 4 * * *" not in html
    assert 'name="t-0-expression"' in html and 'name="t-1-kind"' not in html


def test_the_preview_shows_text_times_and_inline_errors(client, viewer) -> None:
    client.force_login(viewer)
    client.cookies["tz"] = "Asia/Tokyo"  # the operator's zone, as the browser reports it
    good = client.post(
        "/schedules/preview/",
        {"t-kind": "cron", "t-expression": "0 9 * * 1-5", "t-tz": "UTC"},
        **HX,
    ).content.decode()
    assert "At 09:00, Monday through Friday, UTC" in good
    assert good.count("09:00 +0000") == 10
    assert good.count("18:00 +0900") == 10
    bad = client.post(
        "/schedules/preview/", {"t-kind": "cron", "t-expression": "0 9 * *", "t-tz": "UTC"}, **HX
    ).content.decode()
    assert 'id="err-t" role="alert" hx-swap-oob="true">cron expression needs 5 fields' in bad


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"t-every": "1", "t-unit": "weeks"}, "unit: choose seconds, minutes, hours, days"),
        ({"t-every": "\u0663", "t-unit": "seconds"}, "every: enter a number"),  # Arabic-Indic 3
        ({"t-every": "1_000", "t-unit": "seconds"}, "every: enter a number"),
        ({"t-every": "10", "t-jitter": "\u0665"}, "jitter: enter a number of seconds"),
    ],
)
def test_the_builder_refuses_what_it_would_not_show_back(client, viewer, fields, error) -> None:
    client.force_login(viewer)
    html = client.post(
        "/schedules/preview/", {"t-kind": "interval", **fields}, **HX
    ).content.decode()
    assert error in html
    assert "Every" not in html


def test_the_builder_reads_plain_numbers(client, viewer) -> None:
    client.force_login(viewer)
    for number, unit, text in (
        ("1.5", "hours", "Every 1 hour 30 minutes"),
        ("2", "days", "Every 2 days"),
    ):
        html = client.post(
            "/schedules/preview/", {"t-kind": "interval", "t-every": number, "t-unit": unit}, **HX
        ).content.decode()
        assert text in html, html


def test_edit_changes_the_trigger_and_moves_the_next_slot(client, editor, schedule) -> None:
    client.force_login(editor)
    before = schedule.next_run_at
    data = form(code="nightly", **{"t-expression": "30 4 * * *", "t-tz": "UTC"})
    response = client.post(f"/schedules/{schedule.pk}/edit/", data)
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.trigger["expression"] == "30 4 * * *"
    assert schedule.next_run_at != before
    assert schedule.source == "operator"


def test_the_tasks_page_lists_declarations(client, editor) -> None:
    client.force_login(editor)
    html = client.get("/tasks/").content.decode()
    assert "test.every_hour" in html and "Every 1 hour" in html
    assert "tests.taskapp.tasks.echo_async" in html
    assert "/schedules/new/?task=test.echo" in html


def test_create_from_a_task_prefills_it(client, editor) -> None:
    client.force_login(editor)
    html = client.get("/schedules/new/?task=test.every_hour").content.decode()
    assert 'value="test.every_hour"' in html  # a task name is a valid code
    assert 'name="t-every" value="1"' in html and "<option selected>hours</option>" in html


def test_the_live_log_loads_recent_events(client, viewer, schedule) -> None:
    for status in ("succeeded", "failed"):
        Run.objects.create(
            schedule=schedule, schedule_code="nightly", task_name="test.echo",
            reason="scheduled", status=status, error="boom" if status == "failed" else "",
        )  # fmt: skip
    client.force_login(viewer)
    html = client.get(f"/live/?schedule={schedule.pk}").content.decode()
    assert html.count('class="log-row"') == 2
    assert "/ws/runs/?view=log&amp;since=" in html
    assert f"&amp;schedule={schedule.pk}" in html


def test_past_a_few_hundred_schedules_the_live_log_filters_by_a_typed_code(
    client, viewer, schedule, monkeypatch
) -> None:
    """A menu of every schedule grows the page with them; past PICKER_MAX it is a box
    for a code, and a code no schedule has says so and shows every run."""
    from schedules.web.views import live

    make_schedule("other", "test.echo", every(60))
    monkeypatch.setattr(live, "PICKER_MAX", 1)
    client.force_login(viewer)
    html = client.get("/live/").content.decode()
    assert 'name="code"' in html and '<select name="schedule"' not in html
    html = client.get("/live/?code=nightly").content.decode()
    assert f"&amp;schedule={schedule.pk}" in html and 'value="nightly"' in html
    html = client.get("/live/?code=nope").content.decode()
    assert "No schedule has the code “nope”: showing every one." in html
    assert "&amp;schedule=" not in html
    assert 'value="nightly"' in client.get(f"/live/?schedule={schedule.pk}").content.decode()
    assert client.get("/live/?code=a%00b").status_code == 200  # PostgreSQL text holds no NUL
    monkeypatch.setattr(live, "PICKER_MAX", 200)
    assert '<select name="schedule"' in client.get("/live/").content.decode()
    assert "No schedule has the code “nope”" in client.get("/live/?code=nope").content.decode()


def test_admin_actions_call_the_services(client, owner) -> None:
    schedule = make_schedule("a", "test.echo", every(60))
    client.force_login(owner)
    response = client.post(
        "/admin/schedules/schedule/",
        {"action": "pause", "_selected_action": [schedule.pk]},
    )
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.status == "paused"
    client.post(
        "/admin/schedules/schedule/", {"action": "run_now", "_selected_action": [schedule.pk]}
    )
    assert Run.objects.get().reason == "manual"
    assert client.get(f"/admin/schedules/run/{Run.objects.get().pk}/change/").status_code == 200
    assert json.dumps(schedule.trigger)


def test_an_edit_onto_a_changed_schedule_is_refused_with_the_difference(client, editor) -> None:
    schedule = make_schedule("shared", "test.echo", every(60))
    client.force_login(editor)
    page = client.get(f"/schedules/{schedule.pk}/edit/").content.decode()
    assert 'name="opened_version" value="1"' in page
    assert "Opened version" not in page  # a hidden field has no label on the page
    Schedule.objects.filter(pk=schedule.pk).update(max_attempts=5, version=2)  # another editor
    form = {
        "task_name": "test.echo", "kwargs": "{}", "tz": "", "max_attempts": "2",
        "retry_delay": "10", "max_instances": "1", "overlap": "skip", "misfire": "skip",
        "misfire_grace": "60", "priority": "0", "dispatch": "inline", "opened_version": "1",
        "t-kind": "interval", "t-every": "1", "t-unit": "minutes", "t-jitter": "0",
    }  # fmt: skip
    response = client.post(f"/schedules/{schedule.pk}/edit/", form)
    assert response.status_code == 409
    assert "changed by someone else since you opened it" in response.content.decode()
    assert "max_attempts: now 5, yours 2" in response.content.decode()
    schedule.refresh_from_db()
    assert schedule.max_attempts == 5


def test_an_edit_saves_only_what_changed_and_never_rewinds_a_claimed_slot(editor) -> None:
    from datetime import timedelta

    from schedules import services

    schedule = make_schedule("claimed", "test.echo", every(60))
    loaded = Schedule.objects.get(pk=schedule.pk)  # the operator opens the form
    moved = loaded.next_run_at + timedelta(minutes=1)
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=moved, run_count=7)  # a claim
    services.schedule_update(
        schedule=loaded, trigger=loaded.trigger, max_attempts=3, expected_version=loaded.version
    )
    schedule.refresh_from_db()
    assert (schedule.next_run_at, schedule.run_count, schedule.max_attempts) == (moved, 7, 3)
    assert schedule.version == 2


def test_an_edited_code_default_says_how_it_differs_and_offers_reset(client, editor) -> None:
    from schedules import services

    services.sync_code_defaults()
    record = Schedule.objects.get(code="test.every_hour")
    services.schedule_update(schedule=record, trigger=every(120), by=editor)
    client.force_login(editor)
    html = client.get(f"/schedules/{record.pk}/").content.decode()
    assert "Differs from the code's default" in html
    assert "Reset to the code's default" in html
    client.post(f"/schedules/{record.pk}/reset/")
    record.refresh_from_db()
    assert (record.trigger["every"], record.source) == (3600, "code")
    assert "Differs from the code" not in client.get(f"/schedules/{record.pk}/").content.decode()
