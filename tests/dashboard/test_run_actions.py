"""Stopping runs from the dashboard: cancel one run, drop a schedule's queue, the banner."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedules.models import Run, RunStatus, SchedulerInstance

from .conftest import HX

pytestmark = pytest.mark.django_db


def queued_run(schedule, **fields) -> Run:
    return Run.objects.create(
        schedule=schedule, schedule_code=schedule.code, task_name=schedule.task_name,
        reason="manual", **fields,
    )  # fmt: skip


def test_cancel_requires_the_operate_permission(client, viewer, schedule) -> None:
    run = queued_run(schedule)
    client.force_login(viewer)
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 403
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED


def test_cancel_of_an_unknown_run_is_404(client, operator) -> None:
    client.force_login(operator)
    assert client.post("/runs/999999/cancel/").status_code == 404


def test_an_operator_cancels_a_run_and_is_named_on_it(client, operator, schedule) -> None:
    run = queued_run(schedule)
    client.force_login(operator)
    response = client.post(f"/runs/{run.pk}/cancel/", {"next": f"/schedules/{schedule.pk}/"})
    assert response.status_code == 302
    assert response["Location"] == f"/schedules/{schedule.pk}/"
    run.refresh_from_db()
    assert (run.status, run.cancelled_by, run.error) == (
        RunStatus.CANCELLED, "operator", "cancelled by operator",
    )  # fmt: skip


def test_cancel_never_redirects_off_site(client, operator, schedule) -> None:
    run = queued_run(schedule)
    client.force_login(operator)
    response = client.post(f"/runs/{run.pk}/cancel/", {"next": "https://evil.example/"})
    assert response["Location"] == f"/runs/{run.pk}/"


def test_a_cancel_without_next_goes_back_to_the_run(client, operator, schedule) -> None:
    run = queued_run(schedule)
    client.force_login(operator)
    response = client.post(f"/runs/{run.pk}/cancel/")
    assert response["Location"] == f"/runs/{run.pk}/"


def test_the_stop_button_swaps_the_run_now_control_and_explains_a_refusal(
    client, operator, schedule
) -> None:
    run = queued_run(schedule, status=RunStatus.SUCCEEDED)
    client.force_login(operator)
    response = client.post(f"/runs/{run.pk}/cancel/", **HX)
    html = response.content.decode()
    assert response.status_code == 200
    assert f'id="run-now-{schedule.pk}"' in html
    assert f"run #{run.pk} already ended (succeeded)" in html


def test_the_schedule_page_offers_stop_and_drop_to_operators_only(
    client, operator, viewer, schedule
) -> None:
    queued_run(schedule)
    client.force_login(viewer)
    html = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "Drop 1 queued run" not in html and ">Cancel</button>" not in html
    client.force_login(operator)
    html = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "Drop 1 queued run" in html and ">Cancel</button>" in html


def test_drop_queued_cancels_the_schedule_queue(client, operator, schedule) -> None:
    runs = [queued_run(schedule), queued_run(schedule)]
    client.force_login(operator)
    response = client.post(f"/schedules/{schedule.pk}/drop-queued/")
    assert response.status_code == 302
    assert {r.status for r in Run.objects.filter(pk__in=[r.pk for r in runs])} == {
        RunStatus.CANCELLED
    }


def test_the_timeout_shows_the_default_and_the_opt_out(client, viewer, schedule) -> None:
    client.force_login(viewer)
    assert "the default, 3600 s" in client.get(f"/schedules/{schedule.pk}/").content.decode()
    schedule.timeout = 0
    schedule.save()
    html = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "<dt>Timeout</dt><dd>none</dd>" in html


def test_runs_waiting_for_a_worker_are_announced(client, viewer, schedule) -> None:
    now = timezone.now()
    SchedulerInstance.objects.create(id="s1", host="h", pid=1, heartbeat_at=now)
    queued_run(schedule, not_before=now - timedelta(seconds=30))
    queued_run(schedule, not_before=now)  # just queued: not waiting yet
    client.force_login(viewer)
    assert "1 run(s) waiting for a worker" in client.get("/").content.decode()


def test_who_did_what_is_recorded_from_each_channel(client, operator, editor, schedule) -> None:
    from io import StringIO

    from django.contrib.auth.models import User
    from django.core.management import call_command

    from schedules.models import AuditEvent

    client.force_login(operator)
    client.post(f"/schedules/{schedule.pk}/pause/")
    call_command("schedules", "resume", schedule.code, stdout=StringIO())
    owner = User.objects.create_superuser("boss", password="a-long-test-password")
    client.force_login(owner)
    client.post(
        "/admin/schedules/schedule/",
        {"action": "pause", "_selected_action": [schedule.pk]},
    )
    events = list(
        AuditEvent.objects.exclude(action="create")
        .order_by("pk")
        .values_list("action", "actor", "via")
    )
    assert events[0] == ("pause", "operator", "dashboard")
    assert events[1][0] == "resume" and events[1][1].startswith("cli") and events[1][2] == "cli"
    assert events[2] == ("pause", "boss", "admin")
    html = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "boss" in html and "admin" in html


def test_an_edit_records_the_fields_before_and_after(editor, schedule) -> None:
    from schedules import services
    from schedules.models import AuditEvent

    services.schedule_update(schedule=schedule, trigger=schedule.trigger, max_attempts=4, by=editor)
    (event,) = AuditEvent.objects.filter(action="edit")
    assert (event.actor, event.via, event.changes) == (
        "editor", "dashboard", {"max_attempts": [1, 4]},
    )  # fmt: skip
