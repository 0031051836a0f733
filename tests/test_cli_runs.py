"""`manage.py schedules run --kwargs`, `rerun`, `runs --format`, `export` and `import`."""

from __future__ import annotations

import json

import pytest
from django.core.management.base import CommandError

from schedules.models import AuditEvent, Run, RunStatus
from tests.factories import cli, every, make_schedule

pytestmark = pytest.mark.django_db


@pytest.fixture
def report(db):
    return make_schedule("report", "test.django_report", every(3600), kwargs={"region": "eu"})


def test_run_with_kwargs_merges_them_for_that_run(report) -> None:
    data = json.loads(cli("run", "report", "--kwargs", '{"region": "us"}', "--json"))
    run = Run.objects.get(pk=data["id"])
    assert run.kwargs == {"region": "us"}
    event = AuditEvent.objects.get(action="run_now")
    assert event.via == "cli" and event.actor.startswith("cli")


def test_run_with_kwargs_that_do_not_fit_is_one_line_and_exit_2(report) -> None:
    with pytest.raises(CommandError, match="does not fit test.django_report") as info:
        cli("run", "report", "--kwargs", '{"country": "fr"}')
    assert info.value.returncode == 2
    assert Run.objects.count() == 0


@pytest.mark.parametrize("bound", [("--since", "0001-01-01T00:00:00+01:00"),
                                   ("--until", "9999-12-31T23:59:59-01:00")])  # fmt: skip
def test_runs_between_dates_without_a_utc_time_is_one_line_and_exit_2(bound) -> None:
    with pytest.raises(CommandError, match="out of the range of dates") as info:
        cli("runs", *bound)
    assert info.value.returncode == 2


def test_rerun_queues_a_past_run_again_with_its_kwargs(report) -> None:
    old = Run.objects.create(
        schedule=report, schedule_code="report", task_name=report.task_name, reason="scheduled",
        status=RunStatus.FAILED, kwargs={"region": "apac"},
    )  # fmt: skip
    out = cli("rerun", str(old.pk))
    new = Run.objects.exclude(pk=old.pk).get()
    assert out.strip() == f"run #{new.pk} queued (a rerun of run #{old.pk})"
    assert (new.kwargs, new.parent_id) == ({"region": "apac"}, old.pk)
    assert AuditEvent.objects.get(action="rerun").via == "cli"


def test_rerun_refusals_are_one_line(report) -> None:
    with pytest.raises(CommandError, match="no run #999"):
        cli("rerun", "999")
    old = Run.objects.create(
        schedule=report, schedule_code="report", task_name=report.task_name, reason="scheduled",
    )  # fmt: skip
    report.delete()
    with pytest.raises(CommandError, match="its schedule 'report' was deleted") as info:
        cli("rerun", str(old.pk))
    assert info.value.returncode == 2
