"""Monotonic run counters and cumulative histograms per schedule code, for /metrics.

Written in the transaction that records the outcomes; read at scrape time.
Rows are keyed by schedule code and counter name (`runs:<status>`,
`duration:<bucket>`, `duration_sum`, `lateness:<bucket>`, `lateness_sum`,
`claims:lost`, `claims:conflict`);
nothing ever lowers them, so deleting a schedule or pruning runs leaves the
series intact. The same writes add to the totals by name (counter_totals.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction

from . import counter_totals
from .alerts.models import RunCounter
from .choices import RunReason
from .counter_totals import in_steps

LATENESS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)
INF = "+Inf"
# Counters a schedule's first outcome creates, about: its status, a duration and a
# lateness bucket, their sums (exported_codes reads this many a label at a time).
FIRST_COUNTERS = 8


def bucket_of(value: float, buckets: tuple[float, ...]) -> str:
    for bound in buckets:
        if value <= bound:
            return str(bound)
    return INF


def increments(runs: Iterable) -> dict[tuple[str, str], float]:
    """What a batch of finished runs adds to each (code, counter)."""
    added: dict[tuple[str, str], float] = defaultdict(float)
    for run in runs:
        code = run.schedule_code
        added[(code, f"runs:{run.status}")] += 1
        if run.started_at and run.finished_at:
            duration = (run.finished_at - run.started_at).total_seconds()
            added[(code, f"duration:{bucket_of(duration, DURATION_BUCKETS)}")] += 1
            added[(code, "duration_sum")] += in_steps(duration)
            if run.reason == RunReason.SCHEDULED and run.slot is not None:
                late = max(0.0, (run.started_at - run.slot).total_seconds())
                added[(code, f"lateness:{bucket_of(late, LATENESS_BUCKETS)}")] += 1
                added[(code, "lateness_sum")] += in_steps(late)
    return added


def tally(runs: Iterable) -> None:
    """Add finished runs to the counters (inside the transaction that records them)."""
    _add(increments(runs))


# A due slot this process read and another claimed first (several schedulers race for
# each slot; one wins): how often the race was lost, not an error.
CLAIMS_LOST = "claims:lost"
# A claimed slot that already had a run: the unique (schedule, slot, attempt) safety net
# fired, so the slot was skipped rather than run twice. Should stay at zero.
CLAIM_CONFLICTS = "claims:conflict"


def count_claims(name: str, codes: Iterable[str]) -> None:
    """Add one to the claim counter `name` for each schedule code given."""
    added: dict[tuple[str, str], float] = defaultdict(float)
    for code in codes:
        added[(code, name)] += 1
    _add(added)


def _add(added: dict[tuple[str, str], float]) -> None:
    """Add to the counters and to this writer's totals (counter_totals.py)."""
    if not added:
        return
    totals: dict[str, float] = defaultdict(float)
    for (_, name), value in added.items():
        totals[name] += value
    # Together or not at all: a scrape between the two would see `_other` drop.
    with transaction.atomic(savepoint=False):
        counter_totals.upsert(RunCounter, "schedule_code", added)
        counter_totals.add(totals)


def exported_codes(limit: int) -> set[str]:
    """The schedule codes with their own label: the first `limit` ever counted.

    Stable over time (first seen, not busiest), so a series never moves
    between its own label and `_other`, which would look like a counter reset.
    Read as the counters were created (by id), a batch at a time, until `limit`
    codes are seen: a code's first outcome creates its few counters together, so
    one batch nearly always does, where grouping every counter by code read them all
    (18 ms of a scrape at 10,000 schedules on PostgreSQL, growing with them).
    """
    seen: dict[str, None] = {}  # in first-seen order
    after = 0
    batch = max(limit, 1) * FIRST_COUNTERS
    while len(seen) < limit:
        rows = list(
            RunCounter.objects.filter(pk__gt=after)
            .order_by("pk")
            .values_list("pk", "schedule_code")[:batch]
        )
        for _, code in rows:
            seen.setdefault(code)
            if len(seen) == limit:
                break
        if len(rows) < batch:
            break
        after = rows[-1][0]
    return set(seen)
