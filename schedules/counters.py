"""Monotonic run counters and cumulative histograms per schedule code, for /metrics.

Written in the transaction that records the outcomes; read at scrape time.
Rows are keyed by schedule code and counter name (`runs:<status>`,
`duration:<bucket>`, `duration_sum`, `lateness:<bucket>`, `lateness_sum`,
`claims:lost`, `claims:conflict`);
nothing ever lowers them, so deleting a schedule or pruning runs leaves the
series intact.

The same writes add to each name's total (CounterTotal), in a shard of the
writing process's own, so that /metrics gives the schedules past its label limit
as the totals less the labelled counters: summing their counters instead read every
one (222 ms a scrape at 100,000 schedules with 7 counters each on SQLite). The
subtraction must be exact, or `_other` could fall between two scrapes by a rounding
error, which Prometheus reads as a counter reset: counts are whole numbers, and the
sums of seconds are kept in steps of 1/1024 s, binary fractions that a float adds
exactly up to 2**43 s (278,000 years of summed run time).
"""

from __future__ import annotations

import os
import secrets
import socket
from collections import defaultdict
from collections.abc import Iterable

from django.db import connection, transaction
from django.db.models import Model

from .alerts.models import CounterTotal, RunCounter
from .bulk import locked_or_skipped
from .choices import RunReason

LATENESS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)
INF = "+Inf"
# Counters a schedule's first outcome creates, about: its status, a duration and a
# lateness bucket, their sums (exported_codes reads this many a label at a time).
FIRST_COUNTERS = 8
SUM_STEPS = 1024  # per second: see the module's docstring
BASE = ""  # the shard the retention rounds fold the others into


def in_steps(seconds: float) -> float:
    """`seconds` to the nearest 1/1024 s, exact in a float and in any sum of them."""
    return round(seconds * SUM_STEPS) / SUM_STEPS


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
    """Add to the counters and to this process's totals: one upsert each (SQLite
    3.24+ and PostgreSQL), a missing row created, an existing one incremented."""
    if not added:
        return
    totals: dict[str, float] = defaultdict(float)
    for (_, name), value in added.items():
        totals[name] += value
    # Together or not at all: a scrape between the two would see `_other` drop.
    with transaction.atomic(savepoint=False):
        _upsert(RunCounter, "schedule_code", added)
        _upsert(CounterTotal, "shard", {(shard(), name): value for name, value in totals.items()})


def _upsert(model: type[Model], key: str, added: dict[tuple[str, str], float]) -> None:
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    column, name, value = quote(key), quote("name"), quote("value")
    # In key order, as every process writes them: no deadlock between them.
    rows = sorted(added.items())
    sql = (
        f"INSERT INTO {table} ({column}, {name}, {value}) VALUES "
        + ", ".join(["(%s, %s, %s)"] * len(rows))
        + f" ON CONFLICT ({column}, {name}) DO UPDATE SET {value} = {table}.{value} + "
        f"excluded.{value}"
    )
    params = [item for (k, n), v in rows for item in (k, n, v)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


# (pid, shard): a forked child draws its own, so no two processes add to one row.
_shard: tuple[int, str] | None = None


def shard() -> str:
    """This process's totals shard: no other process writes its rows, so counting
    never makes one scheduler wait for another's transaction."""
    global _shard
    pid = os.getpid()
    if _shard is None or _shard[0] != pid:
        _shard = (pid, f"{socket.gethostname()[:60]}:{pid}:{secrets.token_hex(4)}")
    return _shard[1]


def fold_totals() -> int:
    """Move every shard's totals into the base shard; returns the rows folded.

    Each process that ever counted left a shard; folded on the retention timer, the
    totals stay a few rows per name whatever the restarts. A writer that adds after
    the fold creates its row again. A row another process holds (its counting
    transaction is open) is left to the next fold rather than waited for, so a fold
    and a writer never wait on each other (PostgreSQL; SQLite writes one at a time).
    """
    with transaction.atomic():
        rows = list(
            locked_or_skipped(CounterTotal.objects.exclude(shard=BASE).order_by("pk")).values_list(
                "pk", "name", "value"
            )
        )
        if not rows:
            return 0
        folded: dict[tuple[str, str], float] = defaultdict(float)
        for _, name, value in rows:
            folded[(BASE, name)] += value
        CounterTotal.objects.filter(pk__in=[pk for pk, *_ in rows]).delete()
        _upsert(CounterTotal, "shard", folded)
    return len(rows)


def read(codes: Iterable[str]) -> tuple[list[tuple[str, str, float]], dict[str, float]]:
    """(the counters of `codes`, the others' summed by name): one statement, so one
    snapshot of both tables; the others are the totals less the counters read."""
    codes = sorted(codes)
    quote = connection.ops.quote_name
    counters, totals = quote(RunCounter._meta.db_table), quote(CounterTotal._meta.db_table)
    code, name, value = quote("schedule_code"), quote("name"), quote("value")
    sql = f"SELECT NULL, {name}, SUM({value}) FROM {totals} GROUP BY {name}"
    if codes:
        sql = (
            f"SELECT {code}, {name}, {value} FROM {counters} "
            f"WHERE {code} IN ({', '.join(['%s'] * len(codes))}) UNION ALL {sql}"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, codes)
        rows = cursor.fetchall()
    labelled = [row for row in rows if row[0] is not None]
    others: dict[str, float] = defaultdict(float)
    for counted, counter, amount in rows:
        others[counter] += amount if counted is None else -amount
    # Exact (see the docstring): a name no unlabelled schedule counted comes to zero.
    return labelled, {counter: left for counter, left in others.items() if left > 0}


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
