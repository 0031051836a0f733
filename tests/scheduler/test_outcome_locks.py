"""The order in which outcomes lock rows (run tallies, schedules/run_tallies.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedules.models import Run, Schedule
from schedules.scheduler import outcomes
from tests.factories import T0, every, make_schedule

pytestmark = pytest.mark.django_db


def running(schedule: Schedule, second: int) -> Run:
    at = T0 + timedelta(seconds=second)
    return Run.objects.create(
        schedule=schedule, schedule_code=schedule.code, task_name=schedule.task_name,
        status="running", queued_at=at, not_before=at, slot=at, started_at=at,
        reason="scheduled",
    )  # fmt: skip


def test_outcomes_take_their_schedules_before_adding_to_their_tallies() -> None:
    """A claim locks a schedule's row, then its skipped runs add to the schedule's tally.
    An outcome adds to that tally too: written before taking the schedule, two
    schedulers could each hold what the other waits for (PostgreSQL's row locks). The
    schedules' counters are updated first, which takes them, with no extra query."""
    first, second = (make_schedule(code, "test.echo", every(60)) for code in ("one", "two"))
    runs = [running(second, 0), running(first, 1), running(second, 2000)]
    ok = {"status": "succeeded", "error": "", "traceback": "", "result": None, "retry_in": None}
    items = [(Run.objects.select_related("schedule").get(pk=r.pk), dict(ok)) for r in runs]
    with CaptureQueriesContext(connection) as queries:
        outcomes.finish_runs(items=items, now=T0 + timedelta(seconds=3000))
    statements = [q["sql"] for q in queries.captured_queries]
    update = 'UPDATE "schedules_run"'  # executemany's entry reads "3 times: UPDATE ..."
    written = next(i for i, sql in enumerate(statements) if update in sql)
    # The schedules' counters are written (and their rows locked) before the runs.
    locks = [i for i, sql in enumerate(statements) if 'UPDATE "schedules_schedule"' in sql]
    assert locks and locks[0] < written
    assert not any("FOR UPDATE" in sql and "schedules_schedule" in sql for sql in statements)
    assert Run.objects.filter(status="succeeded").count() == 3
    # Written by tally: schedule, then quarter hour, whatever order they finished in.
    ordered = sorted((r for r, _ in items), key=outcomes.tally_order)
    assert [r.pk for r in ordered] == [runs[1].pk, runs[0].pk, runs[2].pk]
