"""GET /metrics: off by default, a bearer token, or public; numbers from the records."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedules.models import Run, SchedulerInstance
from tests.factories import every, make_schedule

pytestmark = pytest.mark.django_db
TOKEN = "a-metrics-token-of-some-length"


def test_metrics_are_off_by_default(client) -> None:
    assert client.get("/metrics").status_code == 404


def test_a_token_is_required_in_token_mode(client, settings) -> None:
    settings.SILLO_METRICS, settings.SILLO_METRICS_TOKEN = "token", TOKEN
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_the_numbers_come_from_the_records(client, settings) -> None:
    settings.SILLO_METRICS = "public"
    now = timezone.now()
    schedule = make_schedule("m", "test.echo", every(60))
    SchedulerInstance.objects.create(id="s1", host="h", pid=1, heartbeat_at=now)
    for i, (late, status) in enumerate(((0.02, "succeeded"), (0.2, "succeeded"), (3.0, "failed"))):
        slot = now - timedelta(seconds=10 + i)
        Run.objects.create(
            schedule=schedule, schedule_code="m", task_name="test.echo", reason="scheduled",
            status=status, slot=slot, started_at=slot + timedelta(seconds=late), finished_at=now,
        )  # fmt: skip
    schedule.run_count, schedule.error_count = 3, 1  # as the scheduler counts them
    schedule.save()
    Run.objects.create(schedule=schedule, schedule_code="m", task_name="test.echo",
                       reason="manual", status="queued")  # fmt: skip
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert "sillo_runs_total 3.0" in text
    assert "sillo_run_errors_total 1.0" in text
    assert 'sillo_runs_in_flight{status="queued"} 1.0' in text
    assert 'sillo_runs_in_flight{status="running"} 0.0' in text
    assert 'sillo_schedules{status="active"} 1.0' in text
    assert 'sillo_instances_alive{kind="scheduler"} 1.0' in text
    assert 'sillo_run_lateness_seconds_bucket{le="0.025"} 1.0' in text
    assert 'sillo_run_lateness_seconds_bucket{le="0.25"} 2.0' in text
    assert "sillo_run_lateness_seconds_count 3.0" in text
