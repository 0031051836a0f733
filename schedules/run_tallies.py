"""Run tallies: each schedule's finished runs per quarter hour, for the schedule page.

The page charts 30 days of runs per day (runs, successes, errors). Counting them
from the run table read every run: 64 ms of SQL for a schedule with 100,000 runs
in its 30 days, the bulk of a 155 ms page. A tally holds one row per schedule
and quarter hour (Unix seconds // 900, UTC) with the finished runs whose moment
(started, or else queued) falls in it; 30 days are at most 2,880 rows, and
every zone's midnight in use today falls on a quarter hour, so the page sums
whole quarters into the operator's days (run_history.py).

Triggers on the run table keep the tallies, not Python: a run is written by the
scheduler's outcomes and claims, an operator's cancel, crash recovery, retention,
imports, the admin and bulk SQL, and a tally kept by some of them would drift. A
trigger subtracts a finished run's old row and adds its new one, so an insert,
an update (finishing is one: running to succeeded) and a delete each leave the
tally exact. A claim locks a schedule's row before its skipped runs add to the
tally, so the outcome writer (its update of the schedules' counters) and crash
recovery (outcomes.lock_schedules_of) take the schedules first too, and write
their runs ordered by tally: every
scheduler takes the same rows in the same order. Retention's deletes lock no
schedule; they touch a quarter being written only for a schedule running more
than its kept runs in 15 minutes, and a deadlock there fails one pruning round,
which the next round repeats.

Django must store datetimes in UTC (USE_TZ, no database TIME_ZONE): SQLite's
triggers read the stored text as UTC. Check W012 says when it does not.

`ensure_triggers` runs in migration 0023 and after each `migrate` that applies
this app's migrations (Django's SQLite schema editor rebuilds a table to alter it,
dropping its triggers): where the current triggers are missing, it drops any
older ones, creates them and counts the page's days again from the runs, in one
transaction. Trigger names carry a digest of what they count (the statuses, the
columns), so a change to either replaces them on the next `migrate`. PostgreSQL
refuses to alter a column a trigger reads: a migration that alters the run's
status, started_at, queued_at or schedule_id calls `drop_triggers` first (the
hook puts them back). Tallies older than the page's days are deleted on the
retention timer (`prune`). A run is taken away from its tally by an update
only, so one whose tally is gone (pruned, or emptied first by a flush) leaves
no negative row.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection as default_connection
from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from .choices import ERROR_OUTCOMES, FINISHED, RunStatus
from .models import Run, RunTally

QUARTER = 900  # seconds
KEPT_DAYS = 32  # the page's 30 days, and a day either side for the operator's zone
RUNS = Run._meta.db_table
TALLIES = RunTally._meta.db_table
INSTALLED_BY = ("schedules", "0023_run_tally")
# The columns that move a run between tallies (its schedule, its moment, its outcome).
_COLUMNS = "status, started_at, queued_at, schedule_id"


def _names(statuses) -> str:
    return "(" + ", ".join(f"'{status}'" for status in statuses) + ")"


# Interrupted runs are not counted as errors on the page (the scheduler died, not the task).
_FINISHED = _names(FINISHED)
_ERRORS = _names(s for s in ERROR_OUTCOMES if s != RunStatus.INTERRUPTED)
_SUCCEEDED = f"'{RunStatus.SUCCEEDED}'"
_DIGEST = hashlib.sha256(repr((2, QUARTER, _COLUMNS, _FINISHED, _ERRORS)).encode()).hexdigest()[:8]
_EVENTS = {
    "sqlite": ("insert", "update", "delete"),
    "postgresql": ("insert", "update", "delete", "truncate"),
}


def _trigger(event: str) -> str:
    return f"{TALLIES}_{event}_{_DIGEST}"


def quarter_of(run: Run) -> int:
    """The quarter a finished run is counted in (as the triggers compute it)."""
    return int((run.started_at or run.queued_at).timestamp()) // QUARTER


@dataclass
class DayTally:
    """A day's finished runs of one schedule, from its quarters' tallies."""

    runs: int = 0
    succeeded: int = 0
    errors: int = 0
    quarters: list[tuple[int, int]] = field(default_factory=list)  # (quarter, runs), in order

    @property
    def counts(self) -> tuple[int, int, int]:
        return self.runs, self.succeeded, self.errors


def per_day(schedule_id: int, starts: list[datetime]) -> dict[int, DayTally]:
    """The schedule's finished runs for each day i that has any, day i being from
    starts[i] until starts[i + 1]: one query of the days' tallies."""
    first, end = (math.floor(start.timestamp() / QUARTER) for start in (starts[0], starts[-1]))
    bounds = [start.timestamp() for start in starts]
    rows = (
        RunTally.objects.filter(schedule_id=schedule_id, quarter__gte=first, quarter__lt=end)
        .order_by("quarter")  # run_tally_key's order: no sort
        .values_list("quarter", "runs", "succeeded", "errors")
    )
    days: dict[int, DayTally] = {}
    until = bounds[0]  # when the day being summed ends
    for quarter, runs, succeeded, errors in rows:  # in time order: the days come one by one
        moment = quarter * QUARTER
        if runs <= 0 or moment < bounds[0]:
            continue
        if moment >= until:
            day = bisect.bisect_right(bounds, moment) - 1
            if day >= len(starts) - 1:
                break
            until, tally = bounds[day + 1], days.setdefault(day, DayTally())
        tally.runs += runs
        tally.succeeded += succeeded
        tally.errors += errors
        tally.quarters.append((quarter, runs))
    return days


def prune(*, now: datetime, budget: int = 5000) -> int:
    """Delete up to `budget` tallies older than the page ever reads."""
    oldest = math.floor((now - timedelta(days=KEPT_DAYS)).timestamp() / QUARTER)
    stale = RunTally.objects.filter(quarter__lt=oldest).order_by("pk")
    pks = list(stale.values_list("pk", flat=True)[:budget])
    if not pks:
        return 0
    return RunTally.objects.filter(pk__in=pks).delete()[0]


def ensure_triggers(connection: BaseDatabaseWrapper = default_connection) -> None:
    """Create the current triggers where they are missing, and count the tallies again."""
    if connection.vendor not in _EVENTS:
        return
    tables = connection.introspection.table_names()
    if RUNS not in tables or TALLIES not in tables:
        return  # migrated back past either table
    wanted = {_trigger(event) for event in _EVENTS[connection.vendor]}
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        found = _existing(cursor, connection.vendor)
        if wanted <= found:
            return
        _drop(cursor, connection.vendor, found)
        for statement in _SQLITE_DDL if connection.vendor == "sqlite" else _POSTGRES_DDL:
            cursor.execute(statement)
        cursor.execute(f"DELETE FROM {TALLIES}")
        # The page's days only: older tallies are never read (and would be pruned).
        since = connection.ops.adapt_datetimefield_value(
            datetime.now(UTC) - timedelta(days=KEPT_DAYS + 1)
        )
        quarter = _QUARTER_SQL[connection.vendor].format(row=RUNS)
        cursor.execute(
            f"INSERT INTO {TALLIES} (schedule_id, quarter, runs, succeeded, errors) "
            f"SELECT schedule_id, {quarter}, COUNT(*), "
            f"SUM(CASE WHEN status = {_SUCCEEDED} THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN status IN {_ERRORS} THEN 1 ELSE 0 END) "
            f"FROM {RUNS} WHERE schedule_id IS NOT NULL AND status IN {_FINISHED} "
            f"AND queued_at >= '{since}' GROUP BY schedule_id, {quarter}"
        )


def drop_triggers(connection: BaseDatabaseWrapper) -> None:
    """Remove the triggers (migration 0023 backwards, or before altering a column they
    read on PostgreSQL)."""
    with connection.cursor() as cursor:
        _drop(cursor, connection.vendor, _existing(cursor, connection.vendor))
        if connection.vendor == "postgresql":
            cursor.execute(f"DROP FUNCTION IF EXISTS {TALLIES}_count()")
            cursor.execute(f"DROP FUNCTION IF EXISTS {TALLIES}_clear()")


def _existing(cursor: CursorWrapper, vendor: str) -> set[str]:
    """The tally triggers on the run table, of any digest."""
    if vendor == "sqlite":
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [RUNS]
        )
    else:
        cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass", [RUNS])
    return {name for (name,) in cursor.fetchall() if name.startswith(f"{TALLIES}_")}


def _drop(cursor: CursorWrapper, vendor: str, names: set[str]) -> None:
    on = "" if vendor == "sqlite" else f" ON {RUNS}"
    for name in sorted(names):
        cursor.execute(f"DROP TRIGGER IF EXISTS {name}{on}")


# A run's quarter, from its row (`{row}`: NEW, OLD or the table). SQLite stores Django's
# datetimes as UTC text; strftime would round a fraction to the millisecond (23:59:59.9999
# into the next day), so the whole seconds are cut out first.
_QUARTER_SQL = {
    "sqlite": "CAST(strftime('%s', substr(COALESCE({row}.started_at, {row}.queued_at), 1, 19)) "
    f"AS INTEGER) / {QUARTER}",
    "postgresql": f"FLOOR(EXTRACT(EPOCH FROM COALESCE({{row}}.started_at, {{row}}.queued_at)) "
    f"/ {QUARTER})::bigint",
}


def _sqlite_add(row: str) -> str:
    """The statement adding the run in `row` to its tally, created if need be."""
    quarter = _QUARTER_SQL["sqlite"].format(row=row)
    return (
        f"INSERT INTO {TALLIES} (schedule_id, quarter, runs, succeeded, errors) "
        f"SELECT {row}.schedule_id, {quarter}, 1, ({row}.status = {_SUCCEEDED}), "
        f"({row}.status IN {_ERRORS}) "
        f"WHERE {row}.schedule_id IS NOT NULL AND {row}.status IN {_FINISHED} "
        "ON CONFLICT (schedule_id, quarter) DO UPDATE SET runs = runs + excluded.runs, "
        "succeeded = succeeded + excluded.succeeded, errors = errors + excluded.errors; "
    )


def _take(row: str, vendor: str) -> str:
    """The statement taking the run in `row` away from its tally. An update only: a run
    whose tally is gone (pruned, or emptied first by a flush) leaves no negative row."""
    quarter = _QUARTER_SQL[vendor].format(row=row)
    cast = "::int" if vendor == "postgresql" else ""
    return (
        f"UPDATE {TALLIES} SET runs = runs - 1, "
        f"succeeded = succeeded - ({row}.status = {_SUCCEEDED}){cast}, "
        f"errors = errors - ({row}.status IN {_ERRORS}){cast} "
        f"WHERE schedule_id = {row}.schedule_id AND quarter = {quarter} "
        f"AND {row}.status IN {_FINISHED}; "
    )


# Only an update that moves a run between tallies runs the trigger's body.
_MOVED = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in _COLUMNS.split(", "))
# A run inserted running or queued (every claim) runs no body; nor one deleted unfinished.
_SQLITE_DDL = [
    f"CREATE TRIGGER IF NOT EXISTS {_trigger('insert')} AFTER INSERT ON {RUNS} "
    f"WHEN NEW.status IN {_FINISHED} BEGIN {_sqlite_add('NEW')}END",
    f"CREATE TRIGGER IF NOT EXISTS {_trigger('delete')} AFTER DELETE ON {RUNS} "
    f"WHEN OLD.status IN {_FINISHED} BEGIN {_take('OLD', 'sqlite')}END",
    f"CREATE TRIGGER IF NOT EXISTS {_trigger('update')} AFTER UPDATE OF {_COLUMNS} ON {RUNS} "
    f"WHEN {_MOVED} BEGIN {_take('OLD', 'sqlite')}{_sqlite_add('NEW')}END",
]


def _postgres_add(row: str) -> str:
    quarter = _QUARTER_SQL["postgresql"].format(row=row)
    return (
        f"IF {row}.schedule_id IS NOT NULL AND {row}.status IN {_FINISHED} THEN "
        f"INSERT INTO {TALLIES} AS t (schedule_id, quarter, runs, succeeded, errors) "
        f"VALUES ({row}.schedule_id, {quarter}, 1, "
        f"({row}.status = {_SUCCEEDED})::int, ({row}.status IN {_ERRORS})::int) "
        "ON CONFLICT (schedule_id, quarter) DO UPDATE SET runs = t.runs + excluded.runs, "
        "succeeded = t.succeeded + excluded.succeeded, errors = t.errors + excluded.errors; "
        "END IF; "
    )


_FINISHED_ROW = "{row}.schedule_id IS NOT NULL AND {row}.status IN " + _FINISHED
_POSTGRES_DDL = [
    f"CREATE OR REPLACE FUNCTION {TALLIES}_count() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    f"IF TG_OP <> 'INSERT' THEN {_take('OLD', 'postgresql')}END IF; "
    f"IF TG_OP <> 'DELETE' THEN {_postgres_add('NEW')}END IF; "
    "RETURN NULL; END $$",
    # TRUNCATE fires no row trigger: the tallies go with the runs.
    f"CREATE OR REPLACE FUNCTION {TALLIES}_clear() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN DELETE FROM {TALLIES}; RETURN NULL; END $$",
    f"CREATE TRIGGER {_trigger('insert')} AFTER INSERT ON {RUNS} FOR EACH ROW "
    f"WHEN ({_FINISHED_ROW.format(row='NEW')}) EXECUTE FUNCTION {TALLIES}_count()",
    f"CREATE TRIGGER {_trigger('delete')} AFTER DELETE ON {RUNS} FOR EACH ROW "
    f"WHEN ({_FINISHED_ROW.format(row='OLD')}) EXECUTE FUNCTION {TALLIES}_count()",
    f"CREATE TRIGGER {_trigger('update')} AFTER UPDATE OF {_COLUMNS} ON {RUNS} FOR EACH ROW "
    f"WHEN ({_MOVED.replace(' IS NOT ', ' IS DISTINCT FROM ')}) "
    f"EXECUTE FUNCTION {TALLIES}_count()",
    f"CREATE TRIGGER {_trigger('truncate')} AFTER TRUNCATE ON {RUNS} FOR EACH STATEMENT "
    f"EXECUTE FUNCTION {TALLIES}_clear()",
]
