"""Chains on the dashboard: the form's follow-up fields, the run page, the schedule page."""

from __future__ import annotations

import pytest
from django.utils import timezone

from schedules import services
from schedules.models import Run, RunReason, RunStatus, Schedule
from tests.factories import every, make_schedule

from .test_schedule_pages import form

NEVER = every(30 * 86400)


@pytest.fixture
def linked(db):
    make_schedule("load", "test.echo", NEVER)
    make_schedule("rescue", "test.echo", NEVER)
    return make_schedule("extract", "test.echo", NEVER, then=["load"], catch=["rescue"])


def chain_of_runs(upstream: Schedule) -> tuple[Run, Run]:
    """A finished upstream run and its chained follow-up, as the scheduler records them."""
    now = timezone.now()
    parent = Run.objects.create(
        schedule=upstream, schedule_code=upstream.code, task_name=upstream.task_name,
        reason=RunReason.SCHEDULED, status=RunStatus.SUCCEEDED, started_at=now, finished_at=now,
    )  # fmt: skip
    load = Schedule.objects.get(code="load")
    child = Run.objects.create(schedule=load, schedule_code="load", task_name=load.task_name,
                               reason=RunReason.CHAINED, parent=parent, depth=1)  # fmt: skip
    return parent, child


def test_the_form_saves_follow_ups_typed_as_codes(client, editor, linked) -> None:
    client.force_login(editor)
    data = form(code="report", then="load, rescue ,load", catch="", result_as="data")
    assert client.post("/schedules/new/", data).status_code == 302
    report = Schedule.objects.get(code="report")
    assert (report.then, report.catch, report.result_as) == (["load", "rescue"], [], "data")
    page = client.get(f"/schedules/{report.pk}/edit/").content.decode()
    assert 'value="load, rescue"' in page


def test_a_cycle_typed_in_the_form_is_a_field_error_with_the_path(client, editor, linked) -> None:
    client.force_login(editor)
    load = Schedule.objects.get(code="load")
    data = form(code="load", then="extract", **{"t-kind": "interval", "t-every": "30",
                                                 "t-unit": "days"})  # fmt: skip
    response = client.post(f"/schedules/{load.pk}/edit/", data)
    assert response.status_code == 422
    assert "a cycle: load then extract then load" in response.content.decode()
    assert Schedule.objects.get(code="load").then == []


def test_an_unknown_follow_up_is_a_field_error(client, editor, linked) -> None:
    client.force_login(editor)
    response = client.post("/schedules/new/", form(catch="nope"))
    assert response.status_code == 422
    assert "no schedule &#x27;nope&#x27;" in response.content.decode()
    assert not Schedule.objects.filter(code="weekday-report").exists()


def test_a_deleted_follow_up_does_not_block_the_edit_form(client, editor, linked) -> None:
    client.force_login(editor)
    services.schedule_delete(schedule=Schedule.objects.get(code="load"))
    data = form(code="extract", then="load", catch="rescue", timeout="5")

    response = client.post(f"/schedules/{linked.pk}/edit/", data)

    assert response.status_code == 302, response.content.decode()
    extract = Schedule.objects.get(code="extract")
    assert (extract.then, extract.timeout) == (["load"], 5)


def test_the_schedule_page_shows_upstream_and_downstream(client, viewer, linked) -> None:
    client.force_login(viewer)
    page = client.get(f"/schedules/{linked.pk}/").content.decode()
    assert 'data-testid="schedule-chain"' in page
    assert ">load</a>" in page and ">rescue</a>" in page
    load = Schedule.objects.get(code="load")
    page = client.get(f"/schedules/{load.pk}/").content.decode()
    assert "Runs after:" in page and ">extract</a>" in page


def test_the_run_page_shows_the_chain_to_viewers(client, viewer, linked) -> None:
    parent, child = chain_of_runs(linked)
    client.force_login(viewer)
    page = client.get(f"/runs/{child.pk}/").content.decode()
    assert f'data-testid="chain-run-{parent.pk}"' in page
    assert f'data-testid="chain-run-{child.pk}"' in page
    assert f'data-chain-ids="{parent.pk},{child.pk}"' in page
    assert 'class="chain-kind k-then">then<' in page
    partial = client.get(f"/runs/{parent.pk}/chain/")
    assert partial.status_code == 200
    assert f'data-testid="chain-run-{child.pk}"' in partial.content.decode()


def test_the_run_page_needs_the_view_permission(client, stranger, linked) -> None:
    parent, _ = chain_of_runs(linked)
    assert client.get(f"/runs/{parent.pk}/").status_code == 302  # to the login page
    client.force_login(stranger)
    assert client.get(f"/runs/{parent.pk}/").status_code == 403
    assert client.get(f"/runs/{parent.pk}/chain/").status_code == 403


def test_an_unknown_run_is_404(client, viewer) -> None:
    client.force_login(viewer)
    assert client.get("/runs/999999/").status_code == 404


def test_a_run_of_its_own_says_so(client, viewer, linked) -> None:
    run = services.schedule_run_now(schedule=linked)
    client.force_login(viewer)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "this run is a chain of its own" in page


def test_run_this_one_only_queues_a_run_without_follow_ups(client, operator, linked) -> None:
    client.force_login(operator)
    page = client.get(f"/schedules/{linked.pk}/").content.decode()
    assert 'data-testid="run-only"' in page
    response = client.post(f"/schedules/{linked.pk}/run/", {"only": "1"})
    assert response.status_code == 302
    client.post(f"/schedules/{linked.pk}/run/")
    flags = list(
        Run.objects.filter(schedule=linked).order_by("pk").values_list("follow_ups", flat=True)
    )
    assert flags == [False, True]


def test_a_viewer_has_no_run_this_one_only_button(client, viewer, linked) -> None:
    client.force_login(viewer)
    assert 'data-testid="run-only"' not in client.get(f"/schedules/{linked.pk}/").content.decode()
