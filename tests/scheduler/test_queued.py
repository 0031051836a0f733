"""Claiming queued runs: one transaction a batch, whatever its size."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedules.models import Run, RunStatus
from schedules.registry import registry
from schedules.scheduler import claims, queued
from tests.factories import T0, every, make_schedule


def queue_runs(count: int) -> None:
    for i in range(count):
        schedule = make_schedule(f"q{count}-{i}", "test.echo", every(3600))
        Run.objects.create(
            schedule=schedule, schedule_code=schedule.code, task_name="test.echo",
            reason="manual", not_before=T0 - timedelta(seconds=1),
        )  # fmt: skip


def claim(free: int | None = None) -> tuple[list[Run], int]:
    slots = claims.WorkerSlots(free, lambda name: True)
    with CaptureQueriesContext(connection) as queries:
        runs, _ = queued.claim_queued(
            now=T0, instance_id="me", tasks=registry, limit=500, local_in_flight={}, slots=slots
        )
    return runs, len(queries)


@pytest.mark.django_db
def test_claiming_queued_runs_costs_the_same_queries_for_three_or_three_hundred() -> None:
    queue_runs(3)
    few, few_queries = claim()
    queue_runs(300)
    many, many_queries = claim()
    assert (len(few), len(many)) == (3, 300)
    assert many_queries == few_queries
    assert set(Run.objects.values_list("status", "scheduler")) == {(RunStatus.RUNNING, "me")}


@pytest.mark.django_db
def test_only_as_many_queued_runs_start_as_workers_are_free() -> None:
    queue_runs(10)
    runs, _ = claim(free=4)
    assert len(runs) == 4
    assert Run.objects.queued().count() == 6
