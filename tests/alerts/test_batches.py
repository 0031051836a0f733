"""One batch of outcomes with several runs of the same schedule.

The incident edge writes what a batch changes at its end (record.py); these are
the orders within one batch that must come out as if each run were recorded
alone: a kind closed and opened again, and a pause followed by another failure.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

from schedules.alerts import record
from schedules.models import Channel, Incident, IncidentEvent, Notification, Run, Schedule
from schedules.scheduler import outcomes
from tests.factories import T0, every, make_schedule

pytestmark = pytest.mark.django_db


def ended(schedule: Schedule, status: str, second: int) -> Run:
    return Run.objects.create(
        schedule=schedule, schedule_code=schedule.code, task_name=schedule.task_name,
        status=status, queued_at=T0 + timedelta(seconds=second), not_before=T0,
        started_at=T0, finished_at=T0 + timedelta(seconds=second), reason="scheduled",
    )  # fmt: skip


def record_batch(runs: list[Run], at: float) -> None:
    with transaction.atomic():
        record.after_outcomes(runs=runs, retried=set(), now=T0 + timedelta(seconds=at))


def test_a_success_then_a_failure_closes_the_incident_and_opens_a_new_one() -> None:
    Channel.objects.create(name="ops", kind="webhook", url="http://127.0.0.1:9/hook")
    schedule = make_schedule("flaky", "test.echo", every(60))
    record_batch([ended(schedule, "failed", 1)], at=100)
    (first,) = Incident.objects.open()

    record_batch([ended(schedule, "succeeded", 2), ended(schedule, "failed", 3)], at=200)

    (second,) = Incident.objects.open()
    assert second.kind == "failing" and second.pk != first.pk
    first.refresh_from_db()
    assert first.closed_at is not None
    assert [n.event for n in Notification.objects.order_by("pk")] == [
        "failed",
        "recovered",
        "failed",
    ]
    assert IncidentEvent.objects.filter(incident=second, event="failed").exists()
    assert Schedule.objects.get(pk=schedule.pk).consecutive_failures == 1


def test_two_failures_past_the_breaker_in_one_batch_pause_once() -> None:
    schedule = make_schedule("fragile", "test.echo", every(60), alert={"pause_after": 1})
    record_batch([ended(schedule, "interrupted", 1), ended(schedule, "interrupted", 2)], at=100)
    (paused,) = Incident.objects.open().filter(kind="auto_paused")
    assert Schedule.objects.get(pk=schedule.pk).status == "paused"
    assert paused.schedule_id == schedule.pk


def test_a_batch_of_two_failed_runs_of_one_schedule_is_recorded() -> None:
    """The scheduler's own write: nothing in it may raise and hold every later outcome."""
    schedule = make_schedule(
        "twice", "test.echo", every(60), alert={"pause_after": 1}, max_instances=2
    )
    runs = [ended(schedule, "running", 0) for _ in range(2)]
    outcome = {"status": "failed", "error": "boom", "traceback": "", "result": None,
               "retry_in": None}  # fmt: skip
    items = [(Run.objects.select_related("schedule").get(pk=r.pk), dict(outcome)) for r in runs]
    outcomes.finish_runs(items=items, now=T0 + timedelta(seconds=5))
    assert set(Run.objects.values_list("status", flat=True)) == {"failed"}
    assert Incident.objects.open().filter(kind="auto_paused").count() == 1


def test_a_probe_that_succeeds_beside_a_failure_leaves_the_schedule_paused_and_watched() -> None:
    schedule = make_schedule(
        "probed", "test.echo", every(60), alert={"pause_after": 1, "probe_after": 1}
    )
    record_batch([ended(schedule, "failed", 1)], at=100)
    paused = Incident.objects.get(kind="auto_paused")
    probe = ended(schedule, "succeeded", 2)
    IncidentEvent.objects.create(
        incident=paused, at=T0 + timedelta(seconds=100), event="probe", run_id=probe.pk
    )

    record_batch([probe, ended(schedule, "failed", 3)], at=200)

    schedule.refresh_from_db()
    assert schedule.status == "paused"
    # Paused again with an open incident, so the half-open probes go on.
    assert Incident.objects.open().filter(kind="auto_paused").exists()
