"""Retention: every kind of run is pruned, on a timer, in bounded batches.

Each schedule keeps its newest SILLO_RUNS_PER_SCHEDULE finished runs (skipped
ones included), runs of deleted schedules are kept the same way per schedule
code, and with SILLO_RUNS_MAX_AGE_DAYS finished runs older than that go too. A run's
captured output goes with it; audit events older than SILLO_AUDIT_MAX_AGE_DAYS
are pruned on the same timer.
A pass deletes at most `budget` rows and visits a bounded number of
schedules (ranked in one query, not one query a schedule), resuming where the
previous pass stopped; the scheduler runs it on a thread of its own, so claims
never wait behind it, whatever the size of the log.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import reduce
from itertools import batched
from operator import or_

from django.db import connections, router, transaction
from django.db.models import Count, OuterRef, Q, Subquery

from ..models import FINISHED, AuditEvent, Run, RunOutput, Schedule

SCHEDULES_PER_PASS = 200
DELETE_BATCH = 500  # ids a statement: under every SQLite build's limit of bound values


@dataclass
class Cursor:
    """Where the next pass resumes: the last schedule id visited."""

    after: int = 0


def prune_runs(*, schedule_id: int, keep: int, budget: int = 5000) -> int:
    """Delete up to `budget` finished runs beyond the newest `keep` of a schedule."""
    return prune_schedules(schedule_ids=[schedule_id], keep=keep, budget=budget)


def prune_schedules(*, schedule_ids: list[int], keep: int, budget: int = 5000) -> int:
    """Delete up to `budget` finished runs beyond the newest `keep` of each schedule."""
    if not schedule_ids or budget <= 0:
        return 0
    if keep <= 0:
        beyond = Q(schedule_id__in=schedule_ids)
    else:
        cutoffs = _oldest_kept(schedule_ids, keep)
        if not cutoffs:
            return 0
        beyond = reduce(or_, (Q(schedule_id=pk, queued_at__lt=at) for pk, at in cutoffs))
    old = Run.objects.filter(beyond, status__in=FINISHED).order_by()
    return _delete(old.values_list("pk", flat=True)[:budget])


def _oldest_kept(schedule_ids: list[int], keep: int) -> list[tuple[int, datetime]]:
    """(schedule, when its oldest kept run was queued) for each schedule with at least
    `keep` runs; its finished runs queued before that go.

    Read from run_history_idx's entries alone, never the rows: ranking the rows, as
    this did, read every kept run of every schedule visited, which beside 10 million
    runs cost SQLite 2 s per 1,000 pruned (docs/benchmarks.md, the run log). Entries
    count runs of every status, so a schedule's queued and running runs widen its
    offset: it keeps at least `keep` finished runs. Runs queued in the same instant
    as the oldest kept one are kept with it (a claim queues catch-ups together).
    """
    unfinished = Counter(Run.objects.running_counts(schedule_ids))
    unfinished.update(Run.objects.queued_counts(schedule_ids))
    by_offset: dict[int, list[int]] = defaultdict(list)
    for pk in schedule_ids:
        by_offset[keep + unfinished[pk] - 1].append(pk)
    cutoffs: list[tuple[int, datetime]] = []
    for offset, ids in by_offset.items():
        newest = Run.objects.filter(schedule_id=OuterRef("pk")).order_by("-queued_at")
        oldest_kept = Subquery(newest.values("queued_at")[offset : offset + 1])
        # Filtered here: a filter in SQL repeated the subquery (PostgreSQL ran it twice).
        found = Schedule.objects.filter(pk__in=ids).annotate(kept_from=oldest_kept).order_by()
        cutoffs += ((pk, at) for pk, at in found.values_list("pk", "kept_from") if at is not None)
    return cutoffs


def prune_pass(
    *, keep: int, max_age_days: float | None, now: datetime, cursor: Cursor, budget: int = 5000
) -> int:
    """One bounded round of pruning; returns the rows deleted."""
    deleted = 0
    if max_age_days:
        old = Run.objects.filter(
            status__in=FINISHED, queued_at__lt=now - timedelta(days=max_age_days)
        )
        deleted += _delete(old.order_by("pk").values_list("pk", flat=True)[:budget])
    ids = list(
        Schedule.objects.filter(pk__gt=cursor.after)
        .order_by("pk")
        .values_list("pk", flat=True)[:SCHEDULES_PER_PASS]
    )
    cursor.after = ids[-1] if len(ids) == SCHEDULES_PER_PASS else 0  # wrap at the end
    deleted += prune_schedules(schedule_ids=ids, keep=keep, budget=budget - deleted)
    # Runs of deleted schedules: kept per schedule code, as their schedule kept them.
    orphaned = Run.objects.filter(schedule__isnull=True, status__in=FINISHED)
    crowded = (
        orphaned.values("schedule_code").annotate(n=Count("pk")).filter(n__gt=keep)
    ).values_list("schedule_code", flat=True)[:SCHEDULES_PER_PASS]
    for code in crowded:
        if deleted >= budget:
            break
        runs = orphaned.filter(schedule_code=code)
        deleted += _delete_beyond(runs, keep, budget - deleted)
    return deleted


def prune_audit(*, max_age_days: float | None, now: datetime, budget: int = 5000) -> int:
    """Delete up to `budget` audit events older than SILLO_AUDIT_MAX_AGE_DAYS."""
    if not max_age_days:
        return 0
    old = AuditEvent.objects.filter(at__lt=now - timedelta(days=max_age_days))
    pks = list(old.order_by("pk").values_list("pk", flat=True)[:budget])
    if not pks:
        return 0
    deleted, _ = AuditEvent.objects.filter(pk__in=pks).delete()
    return deleted


def _delete_beyond(runs, keep: int, budget: int) -> int:
    old = runs.order_by("-queued_at", "-pk").values_list("pk", flat=True)[keep : keep + budget]
    return _delete(old)


def _delete(pks) -> int:
    """Delete these runs and their captured output, and unlink the runs that follow
    them (`parent`, SET_NULL); returns the runs deleted.

    What Django's deletion collector does, in three statements a batch: the collector
    first loaded every run as a model (for the SET_NULL), which was two thirds of a
    pass and held the GIL that the scheduler's loop shares with this thread. Like
    `QuerySet.update`, it sends no model signals.
    """
    pks = list(pks)
    if not pks:
        return 0  # no transaction: on SQLite it would take the write lock for nothing
    deleted = 0
    using = router.db_for_write(Run)  # a host project may route the app's models
    table, pk = connections[using].ops.quote_name(Run._meta.db_table), Run._meta.pk.column
    with transaction.atomic(using=using):
        for batch in batched(pks, DELETE_BATCH):
            Run.objects.using(using).filter(parent_id__in=batch).update(parent=None)
            # No relations of its own: one DELETE.
            RunOutput.objects.using(using).filter(run_id__in=batch).delete()
            marks = ", ".join(["%s"] * len(batch))
            with connections[using].cursor() as cursor:
                cursor.execute(f"DELETE FROM {table} WHERE {pk} IN ({marks})", batch)
                deleted += cursor.rowcount
    return deleted
