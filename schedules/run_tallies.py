"""Run tallies: each schedule's finished runs per quarter hour, for the schedule page.

The page charts 30 days of runs per day (runs, successes, errors). Counting them
from the run table read every run: 64 ms of SQL for a schedule with 100,000 runs
in its 30 days, the bulk of a 155 ms page. A tally holds one row per schedule
and quarter hour (Unix seconds // 900, UTC) with the finished runs whose moment
(started, or else queued) falls in it; 30 days are at most 2,880 rows, and
every zone's midnight in use today falls on a quarter hour, so the page sums
whole quarters into the operator's days (selectors.run_history).

Triggers on the run table keep the tallies, not Python: a run is written by the
scheduler's outcomes and claims, an operator's cancel, crash recovery, retention,
imports, the admin and bulk SQL, and a tally kept by some of them would drift. A
trigger subtracts a finished run's old row and adds its new one, so an insert,
an update (finishing is one: running to succeeded) and a delete each leave the
tally exact. Rows are locked in the order the runs are written; the outcome
writer writes them ordered by schedule (outcomes.finish_runs), and a deadlock
would roll back a batch that the recorder then writes again.

`ensure_triggers` runs in migration 0023 and after each `migrate` that applies
this app's migrations (Django's SQLite schema editor rebuilds a table to alter it,
dropping its triggers): where they were missing, it creates them and counts the
tallies again from the runs, in one transaction. Tallies older than the page's
days are deleted on the retention timer (`prune`).
"""

from __future__ import annotations

import bisect
import math
from datetime import datetime, timedelta

from django.db import connection as default_connection
from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from .choices import ERROR_OUTCOMES, FINISHED, RunStatus
from .models import Run, RunTally

QUARTER = 900  # seconds
KEPT_DAYS = 32  # the page's 30 days, and a day either side for the operator's zone
RUNS = Run._meta.db_table
TALLIES = RunTally._meta.db_table
INSTALLED_BY = ("schedules", "0023_run_tally")
_TRIGGERS = {f"{TALLIES}_{event}" for event in ("insert", "update", "delete")}
# The columns that move a run between tallies (its schedule, its moment, its outcome).
_COLUMNS = "status, started_at, queued_at, schedule_id"


def _names(statuses) -> str:
    return "(" + ", ".join(f"'{status}'" for status in statuses) + ")"


# Interrupted runs are not counted as errors on the page (the scheduler died, not the task).
_FINISHED = _names(FINISHED)
_ERRORS = _names(s for s in ERROR_OUTCOMES if s != RunStatus.INTERRUPTED)
_SUCCEEDED = f"'{RunStatus.SUCCEEDED}'"


def per_day(schedule_id: int, starts: list[datetime]) -> dict[int, tuple[int, int, int]]:
    """(runs, succeeded, errors) of the schedule's finished runs for each day i that has
    any, day i being from starts[i] until starts[i + 1]: one query of the day's tallies."""
    first, end = (math.floor(start.timestamp() / QUARTER) for start in (starts[0], starts[-1]))
    bounds = [start.timestamp() for start in starts]
    rows = RunTally.objects.filter(
        schedule_id=schedule_id, quarter__gte=first, quarter__lt=end
    ).values_list("quarter", "runs", "succeeded", "errors")
    counts: dict[int, list[int]] = {}
    for quarter, runs, succeeded, errors in rows:
        day = bisect.bisect_right(bounds, quarter * QUARTER) - 1
        if 0 <= day < len(starts) - 1 and runs:
            count = counts.setdefault(day, [0, 0, 0])
            count[0] += runs
            count[1] += succeeded
            count[2] += errors
    return {day: (runs, succeeded, errors) for day, (runs, succeeded, errors) in counts.items()}


def prune(*, now: datetime, budget: int = 5000) -> int:
    """Delete up to `budget` tallies older than the page ever reads."""
    oldest = math.floor((now - timedelta(days=KEPT_DAYS)).timestamp() / QUARTER)
    stale = RunTally.objects.filter(quarter__lt=oldest).order_by("pk")
    pks = list(stale.values_list("pk", flat=True)[:budget])
    if not pks:
        return 0
    return RunTally.objects.filter(pk__in=pks).delete()[0]


def ensure_triggers(connection: BaseDatabaseWrapper = default_connection) -> None:
    """Create the triggers where any is missing, and count the tallies again."""
    if connection.vendor not in ("sqlite", "postgresql"):
        return
    tables = connection.introspection.table_names()
    if RUNS not in tables or TALLIES not in tables:
        return  # migrated back past either table
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass", [RUNS])
        if not _TRIGGERS - {name for (name,) in cursor.fetchall()}:
            return
        for statement in _SQLITE_DDL if connection.vendor == "sqlite" else _POSTGRES_DDL:
            cursor.execute(statement)
        cursor.execute(f"DELETE FROM {TALLIES}")
        quarter = _QUARTER_SQL[connection.vendor].format(row=RUNS)
        cursor.execute(
            f"INSERT INTO {TALLIES} (schedule_id, quarter, runs, succeeded, errors) "
            f"SELECT schedule_id, {quarter}, COUNT(*), "
            f"SUM(CASE WHEN status = {_SUCCEEDED} THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN status IN {_ERRORS} THEN 1 ELSE 0 END) "
            f"FROM {RUNS} WHERE schedule_id IS NOT NULL AND status IN {_FINISHED} "
            f"GROUP BY schedule_id, {quarter}"
        )


def drop_triggers(connection: BaseDatabaseWrapper) -> None:
    """Remove the triggers (migration 0023 backwards)."""
    with connection.cursor() as cursor:
        for name in sorted(_TRIGGERS):
            on = "" if connection.vendor == "sqlite" else f" ON {RUNS}"
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}{on}")
        if connection.vendor == "postgresql":
            cursor.execute(f"DROP TRIGGER IF EXISTS {TALLIES}_truncate ON {RUNS}")
            cursor.execute(f"DROP FUNCTION IF EXISTS {TALLIES}_count()")
            cursor.execute(f"DROP FUNCTION IF EXISTS {TALLIES}_clear()")


# A run's quarter, from its row (`{row}`: NEW, OLD or the table). SQLite stores Django's
# datetimes as UTC text; strftime would round a fraction to the millisecond (23:59:59.9999
# into the next day), so the whole seconds are cut out first.
_QUARTER_SQL = {
    "sqlite": "CAST(strftime('%s', substr(COALESCE({row}.started_at, {row}.queued_at), 1, 19)) "
    f"AS INTEGER) / {QUARTER}",
    "postgresql": f"FLOOR(EXTRACT(EPOCH FROM COALESCE({{row}}.started_at, {{row}}.queued_at)) "
    f"/ {QUARTER})::bigint",
}


def _sqlite_add(row: str, sign: str) -> str:
    """The statement adding (sign '') or taking away (sign '-') the run in `row`."""
    quarter = _QUARTER_SQL["sqlite"].format(row=row)
    return (
        f"INSERT INTO {TALLIES} (schedule_id, quarter, runs, succeeded, errors) "
        f"SELECT {row}.schedule_id, {quarter}, {sign}1, {sign}({row}.status = {_SUCCEEDED}), "
        f"{sign}({row}.status IN {_ERRORS}) "
        f"WHERE {row}.schedule_id IS NOT NULL AND {row}.status IN {_FINISHED} "
        "ON CONFLICT (schedule_id, quarter) DO UPDATE SET runs = runs + excluded.runs, "
        "succeeded = succeeded + excluded.succeeded, errors = errors + excluded.errors; "
    )


# Only an update that moves a run between tallies runs the trigger's body.
_MOVED = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in _COLUMNS.split(", "))
# A run inserted running or queued (every claim) runs no body; nor one deleted unfinished.
_SQLITE_DDL = [
    f"CREATE TRIGGER IF NOT EXISTS {TALLIES}_insert AFTER INSERT ON {RUNS} "
    f"WHEN NEW.status IN {_FINISHED} BEGIN {_sqlite_add('NEW', '')}END",
    f"CREATE TRIGGER IF NOT EXISTS {TALLIES}_delete AFTER DELETE ON {RUNS} "
    f"WHEN OLD.status IN {_FINISHED} BEGIN {_sqlite_add('OLD', '-')}END",
    f"CREATE TRIGGER IF NOT EXISTS {TALLIES}_update AFTER UPDATE OF {_COLUMNS} ON {RUNS} "
    f"WHEN {_MOVED} BEGIN {_sqlite_add('OLD', '-')}{_sqlite_add('NEW', '')}END",
]


def _postgres_add(row: str, sign: str) -> str:
    quarter = _QUARTER_SQL["postgresql"].format(row=row)
    return (
        f"IF {row}.schedule_id IS NOT NULL AND {row}.status IN {_FINISHED} THEN "
        f"INSERT INTO {TALLIES} AS t (schedule_id, quarter, runs, succeeded, errors) "
        f"VALUES ({row}.schedule_id, {quarter}, {sign}1, "
        f"{sign}({row}.status = {_SUCCEEDED})::int, {sign}({row}.status IN {_ERRORS})::int) "
        "ON CONFLICT (schedule_id, quarter) DO UPDATE SET runs = t.runs + excluded.runs, "
        "succeeded = t.succeeded + excluded.succeeded, errors = t.errors + excluded.errors; "
        "END IF; "
    )


_FINISHED_ROW = "{row}.schedule_id IS NOT NULL AND {row}.status IN " + _FINISHED
_POSTGRES_DDL = [
    f"CREATE OR REPLACE FUNCTION {TALLIES}_count() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    f"IF TG_OP <> 'INSERT' THEN {_postgres_add('OLD', '-')}END IF; "
    f"IF TG_OP <> 'DELETE' THEN {_postgres_add('NEW', '')}END IF; "
    "RETURN NULL; END $$",
    # TRUNCATE fires no row trigger: the tallies go with the runs.
    f"CREATE OR REPLACE FUNCTION {TALLIES}_clear() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN DELETE FROM {TALLIES}; RETURN NULL; END $$",
    f"DROP TRIGGER IF EXISTS {TALLIES}_insert ON {RUNS}",
    f"CREATE TRIGGER {TALLIES}_insert AFTER INSERT ON {RUNS} FOR EACH ROW "
    f"WHEN ({_FINISHED_ROW.format(row='NEW')}) EXECUTE FUNCTION {TALLIES}_count()",
    f"DROP TRIGGER IF EXISTS {TALLIES}_delete ON {RUNS}",
    f"CREATE TRIGGER {TALLIES}_delete AFTER DELETE ON {RUNS} FOR EACH ROW "
    f"WHEN ({_FINISHED_ROW.format(row='OLD')}) EXECUTE FUNCTION {TALLIES}_count()",
    f"DROP TRIGGER IF EXISTS {TALLIES}_update ON {RUNS}",
    f"CREATE TRIGGER {TALLIES}_update AFTER UPDATE OF {_COLUMNS} ON {RUNS} FOR EACH ROW "
    f"WHEN ({_MOVED.replace(' IS NOT ', ' IS DISTINCT FROM ')}) "
    f"EXECUTE FUNCTION {TALLIES}_count()",
    f"DROP TRIGGER IF EXISTS {TALLIES}_truncate ON {RUNS}",
    f"CREATE TRIGGER {TALLIES}_truncate AFTER TRUNCATE ON {RUNS} FOR EACH STATEMENT "
    f"EXECUTE FUNCTION {TALLIES}_clear()",
]
