"""The scheduler's own INSERT of rows stores what the ORM would, on either database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedules.bulk import insert_rows, unsaved
from schedules.models import Run, RunReason, RunStatus
from schedules.scheduler.records import new_run
from tests.factories import T0, every, make_schedule

pytestmark = pytest.mark.django_db


def varied_runs(schedule, parent: Run, user: User) -> list[Run]:
    """Runs with every column set, unset, or set to an awkward value."""
    plain = new_run(schedule, reason=RunReason.SCHEDULED, slot=T0, now=T0)
    full = new_run(schedule, reason=RunReason.CHAINED, slot=None, now=T0 + timedelta(seconds=1))
    full.kwargs = {"text": "é ☃ \"quoted\" 'single'", "nested": [1, 2.5, None, True, {"k": []}]}
    full.status, full.attempt, full.depth, full.follow_ups = RunStatus.FAILED, 3, 2, False
    full.started_at = T0 + timedelta(microseconds=123456)
    full.finished_at = T0 + timedelta(seconds=2, microseconds=1)
    full.error, full.traceback, full.result = "boom\nline", "Traceback ...", {"rows": [1, 2]}
    full.scheduler, full.cancelled_by, full.parent_id = "abc123", "ops", parent.pk
    full.requested_by_id = user.pk
    listed = new_run(schedule, reason=RunReason.MANUAL, slot=None, now=T0)
    listed.result, listed.kwargs = [1, "two"], {}
    scalar = new_run(schedule, reason=RunReason.RETRY, slot=T0, now=T0)
    scalar.result, scalar.attempt = "just text", 2
    return [plain, full, listed, scalar]


def columns(run: Run) -> dict:
    return {f.attname: getattr(run, f.attname) for f in Run._meta.concrete_fields if f.name != "id"}


def test_inserted_runs_read_back_as_the_orm_would_store_them() -> None:
    schedule = make_schedule("s", "test.echo", every(60))
    parents = [new_run(schedule, reason=RunReason.MANUAL, slot=None, now=T0) for _ in "ab"]
    Run.objects.bulk_create(parents)  # one each: a parent has one chained run per schedule
    user = User.objects.create_user("u")
    ours, theirs = (varied_runs(schedule, parent, user) for parent in parents)
    for run in theirs:
        run.attempt += 10  # the unique (schedule, slot, attempt) allows both copies
    insert_rows(ours)
    Run.objects.bulk_create(theirs)
    assert all(run.pk and not run._state.adding for run in ours)
    for mine, orm in zip(ours, theirs, strict=True):
        stored, expected = (columns(Run.objects.get(pk=r.pk)) for r in (mine, orm))
        expected["attempt"] -= 10
        if expected["parent_id"] is not None:
            expected["parent_id"] = mine.parent_id
        assert stored == expected


def test_a_large_batch_is_inserted_in_chunks_and_every_run_gets_its_own_key() -> None:
    schedule = make_schedule("s", "test.echo", every(60))
    runs = []
    for i in range(2500):
        run = new_run(schedule, reason=RunReason.CATCH_UP, slot=T0 + timedelta(seconds=i), now=T0)
        run.kwargs = {"i": i}
        runs.append(run)
    with CaptureQueriesContext(connection) as queries:
        insert_rows(runs)
    assert len(queries) <= 5  # chunks of the database's parameter limit, not one per run
    assert len({run.pk for run in runs}) == 2500
    stored = dict(Run.objects.values_list("pk", "kwargs"))
    assert all(stored[run.pk] == {"i": i} for i, run in enumerate(runs))


def test_rows_of_any_model_take_the_keys_of_rows_inserted_before_them() -> None:
    """An incident's event is built with the incident, before either has a key; a
    field the model stamps on saving (`auto_now_add`) is stamped."""
    from schedules.models import Channel, Incident, IncidentEvent

    incident = Incident(schedule_code="s", task_name="t", kind="late", opened_at=T0)
    event = IncidentEvent(incident=incident, at=T0, event="late", text="late by 2 min")
    insert_rows([incident])
    insert_rows([event])
    assert IncidentEvent.objects.get(pk=event.pk).incident_id == incident.pk
    channel = Channel(name="ops", kind="webhook", url="http://127.0.0.1:9/hook")
    insert_rows([channel])
    assert Channel.objects.get(pk=channel.pk).created_at is not None


def test_a_row_whose_related_row_was_never_saved_is_refused_not_stored_unlinked() -> None:
    from schedules.models import Incident, IncidentEvent

    unsaved = Incident(schedule_code="s", task_name="t", kind="late", opened_at=T0)
    with pytest.raises(ValueError, match="incident of a new IncidentEvent is not saved"):
        insert_rows([IncidentEvent(incident=unsaved, at=T0, event="late")])
    assert not IncidentEvent.objects.exists()


def test_instances_built_from_one_blank_share_no_state() -> None:
    """`unsaved` copies a blank instance: each copy has its own values, model state and
    related-object cache; a field whose default is computed (a time, a dict) must be
    given, or every copy would carry the blank's; a name that is no field is refused,
    as Model(**values) refuses it."""
    schedule = make_schedule("s", "test.echo", every(60))
    values = {
        "schedule_code": "s",
        "task_name": "test.echo",
        "reason": RunReason.MANUAL,
        "kwargs": {},
        "queued_at": T0,
        "not_before": T0,
    }
    first, second = unsaved(Run, schedule=schedule, **values), unsaved(Run, **values)
    first.status = RunStatus.RUNNING
    insert_rows([first])
    assert first.pk is not None and (first._state.adding, first.schedule) == (False, schedule)
    assert (second.status, second.pk, second._state.adding) == (RunStatus.QUEUED, None, True)
    assert second.schedule is None and second.schedule_id is None
    assert first._state is not second._state
    with pytest.raises(TypeError, match="needs kwargs, not_before, queued_at"):
        unsaved(Run, schedule=schedule)
    with pytest.raises(TypeError, match="unknown schedule_cod"):
        unsaved(Run, schedule_cod="s", **values)
