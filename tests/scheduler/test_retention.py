"""Retention: which runs a pruning pass deletes, what goes with them, and what it reads."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from schedules.models import Run, RunOutput, RunReason, RunStatus
from schedules.scheduler import retention
from tests.factories import T0, every, make_schedule, plan_of


def add_runs(schedule, statuses: list[str], *, start=T0, step: float = 1.0) -> list[Run]:
    """Runs of `schedule` in this order, each queued `step` seconds after the one before."""
    return Run.objects.bulk_create(
        Run(schedule=schedule, schedule_code=schedule.code, task_name=schedule.task_name,
            reason=RunReason.SCHEDULED, status=status,
            queued_at=start + timedelta(seconds=i * step))
        for i, status in enumerate(statuses)
    )  # fmt: skip


def test_retention_keeps_the_newest_runs(db) -> None:
    schedule = make_schedule("chatty", "test.echo", every(60))
    add_runs(schedule, [RunStatus.SUCCEEDED] * 12)
    assert retention.prune_runs(schedule_id=schedule.pk, keep=5) == 7
    kept = list(Run.objects.filter(schedule=schedule).values_list("queued_at", flat=True))
    assert kept == [T0 + timedelta(seconds=i) for i in range(11, 6, -1)]


def test_retention_covers_skipped_runs_deleted_schedules_and_age(db) -> None:
    hung = make_schedule("hung", "test.echo", every(60))
    gone = make_schedule("gone", "test.echo", every(60))
    add_runs(hung, [RunStatus.SKIPPED] * 10, step=60)  # a hung task's schedule piles them up
    add_runs(gone, [RunStatus.SUCCEEDED] * 10, step=60)
    gone.delete()  # its runs stay, with their code
    cursor = retention.Cursor()
    deleted = retention.prune_pass(keep=4, max_age_days=None, now=T0, cursor=cursor)
    assert deleted == 12
    assert Run.objects.filter(schedule_code="hung").count() == 4
    assert Run.objects.filter(schedule_code="gone").count() == 4
    # With an age limit, old finished runs go whatever their count.
    later = T0 + timedelta(days=40)
    assert retention.prune_pass(keep=4, max_age_days=30, now=later, cursor=cursor) == 8
    assert Run.objects.count() == 0


def test_a_pruning_pass_is_bounded_by_its_budget(db) -> None:
    chatty = make_schedule("chatty", "test.echo", every(60))
    add_runs(chatty, [RunStatus.SUCCEEDED] * 50)
    cursor = retention.Cursor()
    assert retention.prune_pass(keep=5, max_age_days=None, now=T0, cursor=cursor, budget=20) == 20
    assert retention.prune_pass(keep=5, max_age_days=None, now=T0, cursor=cursor, budget=20) == 20
    assert retention.prune_pass(keep=5, max_age_days=None, now=T0, cursor=cursor, budget=20) == 5
    assert Run.objects.count() == 5


def test_a_retention_pass_costs_the_same_queries_for_any_number_of_schedules(db) -> None:
    def crowd(prefix: str, schedules: int) -> None:
        for i in range(schedules):
            add_runs(make_schedule(f"{prefix}{i}", "test.echo", every(3600)),
                     [RunStatus.SUCCEEDED] * 4)  # fmt: skip

    def one_pass() -> int:
        with CaptureQueriesContext(connection) as queries:
            retention.prune_pass(keep=2, max_age_days=None, now=T0, cursor=retention.Cursor())
        return len(queries)

    crowd("few", 2)
    few = one_pass()
    crowd("many", 40)
    many = one_pass()
    assert few == many
    assert set(Run.objects.values_list("schedule_code").annotate(n=Count("pk")).values_list(
        "n", flat=True)) == {2}  # fmt: skip


def test_a_schedule_keeps_its_newest_finished_runs_beside_queued_and_running_ones(db) -> None:
    """Runs waiting or running are not counted in what a schedule keeps, nor deleted."""
    schedule = make_schedule("busy", "test.echo", every(60))
    statuses = [RunStatus.SUCCEEDED] * 6 + [RunStatus.FAILED, RunStatus.RUNNING, RunStatus.QUEUED]
    runs = add_runs(schedule, statuses)
    assert retention.prune_runs(schedule_id=schedule.pk, keep=3) == 4
    kept = Run.objects.filter(schedule=schedule).order_by("queued_at")
    assert [run.pk for run in kept] == [run.pk for run in runs[4:]]
    # An unfinished run older than the kept ones (a run hung for days) stays too, and its
    # schedule keeps one finished run more than it must: never fewer.
    hung = make_schedule("hung", "test.echo", every(60))
    add_runs(hung, [RunStatus.RUNNING] + [RunStatus.SUCCEEDED] * 5)
    assert retention.prune_runs(schedule_id=hung.pk, keep=2) == 2
    left = Run.objects.filter(schedule=hung).values_list("status").annotate(n=Count("pk"))
    assert dict(left) == {RunStatus.RUNNING: 1, RunStatus.SUCCEEDED: 3}


def test_runs_queued_in_the_same_instant_as_the_oldest_kept_one_are_kept(db) -> None:
    """A claim queues a schedule's catch-ups together: whichever of them is the oldest
    kept, its twins stay (a few more than `keep`, never fewer)."""
    schedule = make_schedule("caught-up", "test.echo", every(60))
    add_runs(schedule, [RunStatus.SUCCEEDED] * 2, start=T0 - timedelta(hours=1))
    add_runs(schedule, [RunStatus.SKIPPED] * 3, step=0)
    assert retention.prune_runs(schedule_id=schedule.pk, keep=2) == 2
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.SKIPPED}


def test_a_pruned_run_takes_its_output_and_its_follow_ups_forget_it(db) -> None:
    schedule = make_schedule("chained", "test.echo", every(60))
    first, retry, last = add_runs(schedule, [RunStatus.FAILED, RunStatus.SUCCEEDED,
                                             RunStatus.SUCCEEDED])  # fmt: skip
    Run.objects.filter(pk=retry.pk).update(parent=first)
    RunOutput.objects.create(run=first, text="first", total=5)
    RunOutput.objects.create(run=last, text="last", total=4)
    assert retention.prune_runs(schedule_id=schedule.pk, keep=2) == 1
    assert list(RunOutput.objects.values_list("run_id", flat=True)) == [last.pk]
    retry.refresh_from_db()
    assert retry.parent_id is None


def test_no_run_is_kept_when_retention_keeps_none(db) -> None:
    schedule = make_schedule("forgetful", "test.echo", every(60))
    add_runs(schedule, [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.RUNNING])
    assert retention.prune_runs(schedule_id=schedule.pk, keep=0) == 2
    assert list(Run.objects.values_list("status", flat=True)) == [RunStatus.RUNNING]


@pytest.mark.sqlite
def test_a_pass_finds_the_runs_beyond_what_it_keeps_from_the_history_index_alone(db) -> None:
    """Where a schedule's kept runs end is read from run_history_idx's entries, never
    its rows: beside 10 million runs, ranking the rows cost 2 s per 1,000 pruned."""
    schedule = make_schedule("long", "test.echo", every(60))
    add_runs(schedule, [RunStatus.SUCCEEDED] * 5)
    cutoffs = plan_of(lambda: retention._oldest_kept([schedule.pk], 2))
    assert "COVERING INDEX run_history_idx" in cutoffs, cutoffs
    beyond = plan_of(lambda: retention.prune_runs(schedule_id=schedule.pk, keep=2))
    assert "run_history_idx" in beyond and "SCAN schedules_run" not in beyond, beyond
