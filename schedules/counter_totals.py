"""The run counters' totals by name, so /metrics need not read every counter.

/metrics gives the schedules past its label limit as `schedule="_other"`: the totals
less the labelled schedules' counters. Summing their counters instead read every one
(222 ms of a 344 ms scrape at 100,000 schedules with 7 counters each, SQLite).

- A shard a writer: each connection that counts (a process's thread; a forked child
  draws its own) adds the same amounts to its own total rows, in the counters'
  transaction, so schedulers never queue on one row a name.
- Folded on the retention timer into the base shard, so the rows stay a few a name
  whatever the restarts; recounted from the counters at each scheduler's start and
  daily, which repairs what a writer that skipped the totals left (a process still
  running the code before migration 0028).
- Exact: a subtraction of floats can come out a rounding error lower after only a
  labelled schedule ran, and a counter that falls between two scrapes is a reset to
  Prometheus. Counts are whole numbers, and the sums of seconds count in steps of
  1/16384 s, binary fractions that a float adds exactly up to 2**39 s (17,000 years of
  summed run time).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections import defaultdict
from collections.abc import Iterable
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Model

from .alerts.models import CounterTotal, RunCounter
from .bulk import locked_or_skipped

logger = logging.getLogger(__name__)

SUM_STEPS = 16384  # per second
SUMS = ("duration_sum", "lateness_sum")
BASE = ""  # the shard the others are folded into
RECOUNT_EVERY = timedelta(days=1)


def in_steps(seconds: float) -> float:
    """`seconds` to the nearest 1/16384 s: exact in a float, and in any sum of them."""
    return round(seconds * SUM_STEPS) / SUM_STEPS


def upsert(model: type[Model], key: str, added: dict[tuple[str, str], float]) -> None:
    """Add each (key, name) amount to `model`'s rows: one statement (SQLite 3.24+ and
    PostgreSQL), a missing row created, an existing one incremented."""
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    column, name, value = quote(key), quote("name"), quote("value")
    # In key order, as every writer adds them: no deadlock between them.
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


def _rows(sql: str, params: Iterable = ()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.fetchall()


_local = threading.local()


def shard() -> str:
    """This thread's shard (each has its own connection): no other writer adds to its
    rows, so keeping totals adds no lock that two transactions share."""
    pid = os.getpid()
    if getattr(_local, "pid", None) != pid:  # new, or forked from a counting thread
        _local.pid = pid
        _local.shard = f"{socket.gethostname()[:60]}:{pid}:{secrets.token_hex(6)}"
    return _local.shard


def add(added: dict[str, float]) -> None:
    """Add amounts by name to this writer's shard (in the counters' transaction)."""
    upsert(CounterTotal, "shard", {(shard(), name): value for name, value in added.items()})


def fold() -> int:
    """Move every shard's totals into the base shard; returns the rows folded.

    A row another writer holds (its counting transaction is open) is left to the
    next fold, not waited for (PostgreSQL; SQLite writes one at a time). A writer
    that counts after the fold writes its row again: it waits for the fold's commit
    if the fold took that row, a few milliseconds.
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
        upsert(CounterTotal, "shard", folded)
    return len(rows)


def recount() -> dict[str, float]:
    """Make the totals the counters' sums again; returns the corrections by name.

    The counters and the totals are compared in one statement (one snapshot of
    both); writes meanwhile add to both alike, so the difference is what writers
    that skipped the totals left, and it is added to the base shard. A full read of
    the counters, without a lock: on the retention thread, at a scheduler's start and
    daily. Sums off the steps (written by such a writer) are rounded first.
    """
    quote = connection.ops.quote_name
    counters, totals = quote(RunCounter._meta.db_table), quote(CounterTotal._meta.db_table)
    name, value = quote("name"), quote("value")
    _round_off_steps()
    sql = (
        f"SELECT {name}, SUM(amount) FROM (SELECT {name}, {value} AS amount FROM {counters} "
        f"UNION ALL SELECT {name}, -{value} FROM {totals}) AS amounts GROUP BY {name}"
    )
    # To the steps, so the totals stay exact: a sum written off them meanwhile is
    # rounded by the next recount.
    found = {counter: in_steps(amount) for counter, amount in _rows(sql)}
    corrections = {counter: amount for counter, amount in found.items() if amount}
    if corrections:
        with transaction.atomic():
            upsert(CounterTotal, "shard", {(BASE, n): v for n, v in corrections.items()})
        logger.warning(
            "metrics totals recounted: %s (a process counted without them, or the "
            "counters were edited)",
            ", ".join(f"{n} {v:+g}" for n, v in sorted(corrections.items())),
        )
    return corrections


def _round_off_steps() -> None:
    """Round the sums off the steps: found by a read, so a recount that finds none
    (the usual case) takes no write lock (SQLite's is the whole database's)."""
    quote = connection.ops.quote_name
    table, pk, name, value = (quote(n) for n in (RunCounter._meta.db_table, "id", "name", "value"))
    sql = (
        f"SELECT {pk}, {value} FROM {table} WHERE {name} IN (%s, %s) "
        f"AND {value} * {SUM_STEPS} <> ROUND({value} * {SUM_STEPS})"
    )
    off = _rows(sql, SUMS)
    if off:
        with transaction.atomic():
            for pk, amount in off:
                RunCounter.objects.filter(pk=pk, value=amount).update(value=in_steps(amount))


_negative_logged: set[str] = set()


def read(codes: Iterable[str]) -> tuple[list[tuple[str, str, float]], dict[str, float]]:
    """(the counters of `codes`, the others' sums by name): one statement, so one
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
    rows = _rows(sql, codes)
    labelled = [row for row in rows if row[0] is not None]
    others: dict[str, float] = defaultdict(float)
    for counted, counter, amount in rows:
        others[counter] += amount if counted is None else -amount
    for counter in sorted(c for c, left in others.items() if left < 0):
        if counter not in _negative_logged:  # the recount puts it right; said once
            _negative_logged.add(counter)
            logger.warning("metrics totals of %s are behind the counters", counter)
    # Exact: a name that no unlabelled schedule counted comes to zero.
    return labelled, {counter: left for counter, left in others.items() if left > 0}
