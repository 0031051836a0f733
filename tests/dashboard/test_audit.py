"""The audit trail: a row per operator action, from every channel, and the page that reads them."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from schedules import services
from schedules.models import AuditEvent, Run, Schedule
from schedules.scheduler import retention
from tests.api.conftest import token_caller
from tests.factories import every, make_schedule

pytestmark = pytest.mark.django_db


def trail(code: str) -> list[tuple[str, str, str]]:
    """(action, actor, via) of a schedule's events, oldest first."""
    events = AuditEvent.objects.filter(schedule_code=code).order_by("at", "pk")
    return [(e.action, e.actor, e.via) for e in events]


def cli(*args: str) -> None:
    call_command("schedules", *args, stdout=StringIO())


def test_every_dashboard_action_is_recorded_with_who(client, owner) -> None:
    client.force_login(owner)
    form = {
        "code": "nightly", "task_name": "test.echo", "kwargs": "{}", "tz": "", "timeout": "",
        "max_attempts": "1", "retry_delay": "10", "max_instances": "1", "overlap": "skip",
        "misfire": "skip", "misfire_grace": "60", "priority": "0",
        "t-kind": "cron", "t-expression": "0 9 * * 1-5", "t-tz": "UTC",
    }  # fmt: skip
    assert client.post("/schedules/new/", form).status_code == 302
    schedule = Schedule.objects.get(code="nightly")
    for action in ("pause", "resume"):
        client.post(f"/schedules/{schedule.pk}/{action}/")
    client.post(f"/schedules/{schedule.pk}/run/")
    run = Run.objects.get()
    client.post(f"/runs/{run.pk}/cancel/")
    client.post(f"/schedules/{schedule.pk}/cancel/")
    client.post(f"/schedules/{schedule.pk}/delete/")
    assert trail("nightly") == [
        (action, "owner", "dashboard")
        for action in ("create", "pause", "resume", "run_now", "cancel_run", "cancel", "delete")
    ]


def test_an_edit_keeps_before_and_after_of_the_changed_fields_only(owner) -> None:
    schedule = make_schedule("nightly", "test.echo", every(60), kwargs={"a": 1})
    services.schedule_update(
        schedule=schedule, trigger=every(120), kwargs={"a": 2}, max_attempts=1, by=owner
    )
    event = AuditEvent.objects.get(action="edit")
    assert event.changes["kwargs"] == [{"a": 1}, {"a": 2}]
    assert event.changes["trigger"][1]["every"] == 120
    assert "max_attempts" not in event.changes  # unchanged
    assert (event.actor, event.via) == ("owner", "dashboard")


def test_reset_is_recorded(owner) -> None:
    services.sync_code_defaults()
    schedule = Schedule.objects.get(code="test.every_hour")
    services.schedule_update(schedule=schedule, trigger=every(60), by=owner)
    services.schedule_reset_to_default(schedule=schedule, by=owner)
    assert [a for a, *_ in trail("test.every_hour")] == ["edit", "reset"]


def test_the_admin_records_its_actions_edits_and_deletes(client, owner) -> None:
    schedule = make_schedule("a", "test.echo", every(60))
    client.force_login(owner)
    client.post(
        "/admin/schedules/schedule/", {"action": "pause", "_selected_action": [schedule.pk]}
    )
    client.post(f"/admin/schedules/schedule/{schedule.pk}/delete/", {"post": "yes"})
    assert not Schedule.objects.filter(code="a").exists()
    assert trail("a")[-2:] == [("pause", "owner", "admin"), ("delete", "owner", "admin")]


def test_the_admin_bulk_delete_is_recorded_too(client, owner) -> None:
    first = make_schedule("a", "test.echo", every(60))
    second = make_schedule("b", "test.echo", every(60))
    client.force_login(owner)
    client.post(
        "/admin/schedules/schedule/",
        {"action": "delete_selected", "_selected_action": [first.pk, second.pk], "post": "yes"},
    )
    assert Schedule.objects.count() == 0
    assert trail("a")[-1] == ("delete", "owner", "admin")
    assert trail("b")[-1] == ("delete", "owner", "admin")


def test_the_cli_records_the_os_user(monkeypatch) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "alice")
    make_schedule("a", "test.echo", every(60))
    cli("pause", "a")
    cli("resume", "a")
    cli("run", "a")
    cli("cancel-run", str(Run.objects.get().pk))
    cli("edit", "a", "--every", "120")
    cli("delete", "a")
    assert trail("a")[1:] == [
        (action, "cli:alice", "cli")
        for action in ("pause", "resume", "run_now", "cancel_run", "edit", "delete")
    ]


def test_the_api_records_the_tokens_owner(operator, editor) -> None:
    make_schedule("a", "test.echo", every(60))
    api = token_caller(operator)
    assert api.post("/schedules/a/pause").status_code == 200
    assert api.post("/schedules/a/run").status_code == 202
    assert token_caller(editor).delete("/schedules/a").status_code == 204
    assert trail("a")[1:] == [
        ("pause", "operator", "api"),
        ("run_now", "operator", "api"),
        ("delete", "editor", "api"),
    ]


def test_old_events_go_after_the_retention_age(settings) -> None:
    make_schedule("a", "test.echo", every(60))
    old = AuditEvent.objects.create(schedule_code="a", action="pause", via="cli",
                                    at=timezone.now() - timedelta(days=400))  # fmt: skip
    deleted = retention.prune_audit(max_age_days=365, now=timezone.now())
    assert deleted == 1
    assert not AuditEvent.objects.filter(pk=old.pk).exists()
    assert AuditEvent.objects.filter(action="create").exists()
    assert retention.prune_audit(max_age_days=None, now=timezone.now()) == 0


# ---------------------------------------------------------------- the page


def test_the_audit_page_needs_the_view_permission(client, stranger) -> None:
    client.force_login(stranger)
    assert client.get("/audit/").status_code == 403


def test_the_audit_page_filters(client, viewer, owner, monkeypatch) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "alice")
    schedule = make_schedule("nightly", "test.echo", every(60), by=owner)
    make_schedule("other", "test.echo", every(60), by=owner)
    services.schedule_pause(schedule=schedule, by=owner)
    cli("resume", "nightly")
    old = AuditEvent.objects.create(schedule_code="nightly", action="edit", actor="bob",
                                    via="api", at=timezone.now() - timedelta(days=40),
                                    changes={"kwargs": [{}, {"x": "<b>"}]})  # fmt: skip
    client.force_login(viewer)

    def rows(query: str) -> list[tuple[str, str]]:
        events = client.get(f"/audit/?{query}").context["events"]
        return [(e.schedule_code, e.action) for e in events]

    assert rows("") == [("nightly", "resume"), ("nightly", "pause"), ("other", "create"),
                        ("nightly", "create"), ("nightly", "edit")]  # fmt: skip
    assert rows("schedule=other") == [("other", "create")]
    assert rows("action=pause") == [("nightly", "pause")]
    assert rows("via=cli") == [("nightly", "resume")]
    assert rows("actor=ALI") == [("nightly", "resume")]
    assert ("nightly", "edit") not in rows("window=30d")
    assert rows("action=exploded&via=moon") == rows("")
    html = client.get("/audit/?actor=bob").content.decode()
    assert "&lt;b&gt;" in html and "<b>" not in html.split("<tbody>")[1]
    assert old.pk


def test_the_audit_page_walks_its_pages(client, viewer) -> None:
    moment = timezone.now()
    for i in range(120):
        AuditEvent.objects.create(schedule_code=f"s{i}", action="pause", via="cli",
                                  at=moment - timedelta(seconds=i // 4))  # fmt: skip
    client.force_login(viewer)
    seen, url = [], "/audit/"
    while url:
        response = client.get(url)
        seen += [e.pk for e in response.context["events"]]
        cursor = response.context["next_cursor"]
        url = f"/audit/?cursor={cursor}" if cursor else None
    assert len(seen) == len(set(seen)) == 120


def test_the_schedule_page_shows_its_last_changes_and_links_the_rest(client, viewer, owner):
    schedule = make_schedule("nightly", "test.echo", every(60), by=owner)
    services.schedule_pause(schedule=schedule, by=owner)
    client.force_login(viewer)
    html = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "pause" in html and "owner" in html
    assert "/audit/?schedule=nightly" in html
