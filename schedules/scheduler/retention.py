"""Retention: each schedule keeps its newest runs, older ones are deleted in batches."""

from __future__ import annotations

from ..models import FINISHED, Run


def prune_runs(*, schedule_id: int, keep: int) -> int:
    """Delete finished runs beyond the newest `keep` of a schedule."""
    old = list(
        Run.objects.filter(schedule_id=schedule_id, status__in=FINISHED)
        .order_by("-queued_at", "-pk")
        .values_list("pk", flat=True)[keep : keep + 5000]
    )
    if not old:
        return 0
    deleted, _ = Run.objects.filter(pk__in=old).delete()
    return deleted
