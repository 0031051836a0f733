"""Run now with other kwargs, and rerun a past run: the form, the checks, the refusals."""

from __future__ import annotations

import pytest

from schedules.models import AuditEvent, Run, RunStatus
from tests.factories import every, make_schedule

pytestmark = pytest.mark.django_db


@pytest.fixture
def report(db):
    return make_schedule("report", "test.django_report", every(3600), kwargs={"region": "eu"})


def past_run(schedule, **fields) -> Run:
    return Run.objects.create(
        schedule=schedule, schedule_code=schedule.code, task_name=schedule.task_name,
        reason="scheduled", status=RunStatus.FAILED, **fields,
    )  # fmt: skip


def test_a_viewer_may_not_run_or_rerun(client, viewer, report) -> None:
    client.force_login(viewer)
    assert client.get(f"/schedules/{report.pk}/run-with/").status_code == 403
    assert client.post(f"/schedules/{report.pk}/run-with/", {"kwargs": "{}"}).status_code == 403
    run = past_run(report)
    assert client.post(f"/runs/{run.pk}/rerun/", {"kwargs": "{}"}).status_code == 403
    assert Run.objects.count() == 1


def test_the_form_is_prefilled_with_the_schedules_kwargs_and_signature(
    client, operator, report
) -> None:
    client.force_login(operator)
    html = client.get(f"/schedules/{report.pk}/run-with/").content.decode()
    assert "&quot;region&quot;: &quot;eu&quot;" in html
    assert "test.django_report(region: &#x27;str&#x27; = &#x27;eu&#x27;)" in html


def test_run_now_with_other_kwargs_is_recorded_on_the_run_and_audited(
    client, operator, report
) -> None:
    client.force_login(operator)
    response = client.post(f"/schedules/{report.pk}/run-with/", {"kwargs": '{"region": "us"}'})
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert (run.kwargs, run.reason, run.requested_by.username) == (
        {"region": "us"},
        "manual",
        "operator",
    )
    report.refresh_from_db()
    assert report.kwargs == {"region": "eu"}  # the schedule keeps its own
    event = AuditEvent.objects.get(action="run_now")
    assert event.detail == f"run #{run.pk} with other kwargs"
    assert event.changes == {"kwargs": [{"region": "eu"}, {"region": "us"}]}
    assert (event.actor, event.via) == ("operator", "dashboard")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"country": "fr"}', "does not fit test.django_report: got an unexpected keyword"),
        ("[1, 2]", "must be a JSON object"),
        ("{nope", "not valid JSON"),
    ],
)
def test_kwargs_that_do_not_fit_are_refused_in_the_form(client, operator, report, text, error):
    client.force_login(operator)
    response = client.post(f"/schedules/{report.pk}/run-with/", {"kwargs": text})
    assert response.status_code == 422
    assert error in response.content.decode()
    assert Run.objects.count() == 0


def test_an_orphan_cannot_run_and_the_form_says_why(client, operator, orphan) -> None:
    client.force_login(operator)
    response = client.get(f"/schedules/{orphan.pk}/run-with/")
    assert response.status_code == 409
    assert "no.such.task" in response.content.decode()
    assert client.post(f"/schedules/{orphan.pk}/run-with/", {"kwargs": "{}"}).status_code == 422
    assert Run.objects.count() == 0


def test_a_rerun_repeats_a_past_run_with_its_kwargs(client, operator, report) -> None:
    old = past_run(report, kwargs={"region": "apac"})
    client.force_login(operator)
    html = client.get(f"/runs/{old.pk}/rerun/").content.decode()
    assert "&quot;region&quot;: &quot;apac&quot;" in html
    response = client.post(f"/runs/{old.pk}/rerun/", {"kwargs": '{"region": "apac"}'})
    new = Run.objects.exclude(pk=old.pk).get()
    assert response["Location"] == f"/runs/{new.pk}/"
    assert (new.kwargs, new.parent_id, new.reason) == ({"region": "apac"}, old.pk, "manual")
    event = AuditEvent.objects.get(action="rerun")
    assert event.detail == f"run #{new.pk} with other kwargs, a rerun of run #{old.pk}"
    page = client.get(f"/runs/{new.pk}/").content.decode()
    assert f'a rerun of <a href="/runs/{old.pk}/">run #{old.pk}</a>' in page


def test_a_run_of_a_deleted_schedule_cannot_be_rerun(client, operator, report) -> None:
    old = past_run(report)
    report.delete()
    client.force_login(operator)
    response = client.get(f"/runs/{old.pk}/rerun/")
    assert response.status_code == 409
    assert "its schedule &#x27;report&#x27; was deleted" in response.content.decode()
    response = client.post(f"/runs/{old.pk}/rerun/", {"kwargs": "{}"})
    assert response.status_code == 422
    assert Run.objects.count() == 1
