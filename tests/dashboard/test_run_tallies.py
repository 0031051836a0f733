"""Run tallies (schedules/run_tallies.py): the schedule page's per-day counts, kept by
the database's triggers through every way a run is written, and read without the runs."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from schedules import run_tallies, services
from schedules.bulk import insert_rows
from schedules.choices import FINISHED
from schedules.models import Run, RunTally
from schedules.run_history import run_history
from schedules.scheduler import retention
from schedules.scheduler.records import new_run
from tests.factories import T0, every, make_schedule

pytestmark = pytest.mark.django_db

ERRORS = {"failed", "timed_out"}


def recounted() -> dict[tuple[int, int], tuple[int, int, int]]:
    """The tallies as they should be, counted here from every run."""
    counts: Counter = Counter()
    for schedule_id, status, started, queued in Run.objects.values_list(
        "schedule_id", "status", "started_at", "queued_at"
    ):
        if schedule_id is None or status not in FINISHED:
            continue
        key = (schedule_id, int((started or queued).timestamp()) // run_tallies.QUARTER)
        counts[(*key, "runs")] += 1
        counts[(*key, "succeeded")] += status == "succeeded"
        counts[(*key, "errors")] += status in ERRORS
    keys = {(s, q) for s, q, _ in counts}
    return {
        key: (counts[(*key, "runs")], counts[(*key, "succeeded")], counts[(*key, "errors")])
        for key in keys
    }


def tallies() -> dict[tuple[int, int], tuple[int, int, int]]:
    """The stored tallies, without the quarters that count nothing (all taken away)."""
    rows = RunTally.objects.values_list("schedule_id", "quarter", "runs", "succeeded", "errors")
    return {(s, q): (n, ok, bad) for s, q, n, ok, bad in rows if (n, ok, bad) != (0, 0, 0)}


def finished(schedule, at: datetime, status: str = "succeeded", **fields) -> Run:
    run = new_run(schedule, reason="scheduled", slot=at, now=at)
    run.status, run.started_at, run.finished_at = status, at, at + timedelta(seconds=1)
    for name, value in fields.items():
        setattr(run, name, value)
    return run


def test_every_way_a_run_is_written_keeps_the_tallies_exact() -> None:
    a = make_schedule("tally-a", "test.echo", every(60))
    b = make_schedule("tally-b", "test.echo", every(60))
    # Inserted finished, in bulk (claims' skipped runs, imports) and one by one.
    insert_rows([finished(a, T0 + timedelta(minutes=7 * i), "succeeded") for i in range(6)])
    insert_rows([finished(b, T0, "failed"), finished(b, T0 + timedelta(seconds=1), "skipped")])
    finished(a, T0 + timedelta(seconds=30), "timed_out").save()
    assert tallies() == recounted() and len(tallies()) == 4
    # Queued, then running: not counted; then finished (the scheduler's outcome).
    run = new_run(a, reason="manual", slot=None, now=T0 + timedelta(hours=2))
    run.save()
    Run.objects.filter(pk=run.pk).update(status="running", started_at=T0 + timedelta(hours=3))
    assert tallies() == recounted() and len(tallies()) == 4
    Run.objects.filter(pk=run.pk).update(status="succeeded", finished_at=T0 + timedelta(hours=4))
    assert tallies()[(a.pk, int((T0 + timedelta(hours=3)).timestamp()) // 900)] == (1, 1, 0)
    # An outcome rewritten, a moment moved, a run given to another schedule.
    Run.objects.filter(schedule=b, status="failed").update(status="succeeded")
    Run.objects.filter(pk=run.pk).update(started_at=T0 - timedelta(days=1))
    Run.objects.filter(schedule=a, status="timed_out").update(schedule=b)
    # An update that moves nothing (the output's text) changes nothing.
    Run.objects.filter(schedule=a).update(error="noted")
    assert tallies() == recounted()
    # Deleted: by retention, and with a schedule (its runs are kept, unlinked).
    assert retention.prune_runs(schedule_id=a.pk, keep=2) == 5
    assert tallies() == recounted()
    services.schedule_delete(schedule=b)
    assert tallies() == recounted() and {s for s, _ in tallies()} == {a.pk}


def test_an_emptied_run_table_leaves_no_tally() -> None:
    """PostgreSQL's TRUNCATE fires no row trigger (a benchmark, an operator's cleanup):
    a statement trigger empties the tallies with it."""
    a = make_schedule("tally-a", "test.echo", every(60))
    insert_rows([finished(a, T0 + timedelta(minutes=i)) for i in range(30)])
    assert tallies() == recounted() != {}
    table = connection.ops.quote_name(Run._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Django's foreign keys are checked at commit: this test's transaction has not
            # committed, and PostgreSQL truncates no table with checks still pending.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"TRUNCATE {table} CASCADE")
        else:
            cursor.execute(f"DELETE FROM {table}")
    assert RunTally.objects.filter(runs__gt=0).count() == 0


def test_triggers_a_table_rebuild_dropped_are_put_back_and_the_tallies_recounted() -> None:
    """Django's SQLite schema editor rebuilds a table to alter it, dropping its triggers:
    what was written meanwhile is counted again when they are put back."""
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    a = make_schedule("tally-a", "test.echo", every(60))
    insert_rows([finished(a, now - timedelta(days=2))])
    run_tallies.drop_triggers(connection)
    insert_rows([finished(a, now - timedelta(minutes=50, seconds=i), "failed") for i in range(3)])
    insert_rows([finished(a, now - timedelta(days=40))])  # older than the page reads
    assert tallies() != recounted()  # gone astray while the triggers were missing
    run_tallies.ensure_triggers(connection)
    # The page's days counted again; older runs are not (the pruner would delete them).
    old = int((now - timedelta(days=40)).timestamp()) // 900
    assert tallies() == {k: v for k, v in recounted().items() if k[1] != old}
    insert_rows([finished(a, now - timedelta(minutes=50, seconds=9), "failed")])  # kept again
    assert tallies()[(a.pk, int((now - timedelta(minutes=50)).timestamp()) // 900)] == (4, 0, 4)


def test_triggers_counting_an_older_way_are_replaced() -> None:
    """Trigger names carry a digest of what they count: after a change (a new status),
    `migrate` finds the current names missing, drops the old triggers and counts again."""
    with connection.cursor() as cursor:
        current = run_tallies._existing(cursor, connection.vendor)
        run_tallies._drop(cursor, connection.vendor, current)
        stale = "schedules_runtally_insert_00000000"
        if connection.vendor == "sqlite":
            cursor.execute(f"CREATE TRIGGER {stale} AFTER INSERT ON schedules_run BEGIN "
                           "SELECT 1; END")  # fmt: skip
        else:
            clear = "EXECUTE FUNCTION schedules_runtally_clear()"
            cursor.execute(f"CREATE TRIGGER {stale} AFTER TRUNCATE ON schedules_run "
                           f"FOR EACH STATEMENT {clear}")  # fmt: skip
        run_tallies.ensure_triggers(connection)
        assert run_tallies._existing(cursor, connection.vendor) == current
    assert stale not in current


def test_runs_deleted_after_their_tallies_leave_no_negative_tally() -> None:
    """`flush` empties table by table, maybe the tallies before the runs; pruned tallies
    go before their runs too. Taking a run away from a missing tally writes nothing."""
    a = make_schedule("tally-a", "test.echo", every(60))
    insert_rows([finished(a, T0 + timedelta(minutes=i)) for i in range(5)])
    RunTally.objects.all().delete()
    Run.objects.all().delete()
    assert not RunTally.objects.exists()


def test_the_page_sums_quarters_into_the_operators_days_without_reading_runs() -> None:
    """The counts come from the tallies in one query that reads no run: a tally changed
    by hand shows on the page, and the query count does not grow with the runs."""
    from zoneinfo import ZoneInfo

    zone = ZoneInfo("Asia/Kathmandu")  # +05:45: its midnight is a quarter past 18:00 UTC
    schedule = make_schedule("tally-a", "test.echo", every(60))
    today = date(2026, 6, 10)
    days = [today - timedelta(days=back) for back in range(29, -1, -1)]
    midnight = datetime(2026, 6, 10, tzinfo=zone)
    moments = [midnight - timedelta(seconds=1), midnight, midnight + timedelta(hours=23)]
    insert_rows([finished(schedule, at) for at in moments])
    starts = [datetime.combine(day, datetime.min.time(), tzinfo=zone) for day in days]
    starts.append(midnight + timedelta(days=1))
    with CaptureQueriesContext(connection) as queries:
        counted = run_tallies.per_day(schedule.pk, starts)
    assert {day: tally.counts for day, tally in counted.items()} == {28: (1, 1, 0), 29: (2, 2, 0)}
    assert len(queries) == 1 and '"schedules_run"' not in queries[0]["sql"]
    quarter = int(midnight.astimezone(UTC).timestamp()) // 900
    RunTally.objects.filter(schedule_id=schedule.pk, quarter=quarter).update(runs=7)
    assert run_history(schedule, days=days, zone=zone).counts[today][0] == 8


def test_tallies_older_than_the_page_reads_are_pruned_in_bounded_rounds() -> None:
    schedule = make_schedule("tally-a", "test.echo", every(60))
    now = T0 + timedelta(days=60)
    old = [finished(schedule, T0 + timedelta(hours=i)) for i in range(5)]
    recent = [finished(schedule, now - timedelta(days=31, hours=i)) for i in range(3)]
    insert_rows(old + recent)
    assert run_tallies.prune(now=now, budget=3) == 3
    assert run_tallies.prune(now=now, budget=3) == 2
    assert run_tallies.prune(now=now) == 0
    assert RunTally.objects.count() == 3
