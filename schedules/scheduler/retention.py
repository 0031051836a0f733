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

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber

from ..models import FINISHED, AuditEvent, Run, Schedule

SCHEDULES_PER_PASS = 200


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
    newest_first = [F("queued_at").desc(), F("pk").desc()]
    ranked = Run.objects.filter(schedule_id__in=schedule_ids, status__in=FINISHED).annotate(
        rank=Window(RowNumber(), partition_by=F("schedule_id"), order_by=newest_first)
    )
    return _delete(ranked.filter(rank__gt=keep).values_list("pk", flat=True)[:budget])


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
    pks = list(pks)
    if not pks:
        return 0
    deleted, _ = Run.objects.filter(pk__in=pks).delete()
    return deleted
