"""Schedule records for the benchmarks, written fast on whichever database Django uses.

One model instance gives every column's stored value; each row then differs
only in its code, kwargs, trigger and next slot, so 100,000 rows go in with
one executemany (the ORM's bulk_create takes 20 s for them). Needs Django set
up; bench/scheduler_systems.py (SQLite) and bench/ceiling.py (SQLite and
PostgreSQL) share it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from django.db import connection, transaction


def insert_schedule_rows(slots: dict[str, tuple[float, float]], task_name: str) -> None:
    """One interval schedule per code -> (anchor in epoch s, interval in s), its first
    slot at the anchor; its task gets `code` as its only keyword."""
    from schedules.models import Schedule
    from schedules.timing import Interval

    template = Schedule(
        code="", task_name=task_name, kwargs={}, trigger={}, misfire_grace=3600,
        max_instances=1000, next_run_at=datetime.now(UTC),
    )  # fmt: skip
    fields = [f for f in Schedule._meta.concrete_fields if not f.primary_key]
    base = {f.column: f.get_db_prep_save(f.pre_save(template, True), connection) for f in fields}
    columns = list(base)
    rows = []
    for code, (at, every) in slots.items():
        trigger = Interval(every, anchor=datetime.fromtimestamp(at, UTC), seed=code)
        row = {
            **base,
            "code": code,
            "kwargs": json.dumps({"code": code}),
            "trigger": json.dumps(trigger.to_spec()),
            "next_run_at": connection.ops.adapt_datetimefield_value(trigger.anchor),
        }
        rows.append([row[column] for column in columns])
    quote = connection.ops.quote_name  # columns such as `then` are SQL keywords
    table = quote(Schedule._meta.db_table)
    names = ", ".join(quote(column) for column in columns)
    placeholders = ", ".join(["%s"] * len(columns))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({placeholders})", rows)
