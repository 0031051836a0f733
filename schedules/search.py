"""The schedule search: a text found anywhere in a schedule's code or task name.

A substring cannot use an ordinary index, and `LIKE '%text%'` read every
schedule: 0.5 s of a list page at a million. So:

- task names are few: the names in use are walked (`task_names_in_use`), the
  ones containing the text picked here, and their schedules read by name;
- codes are many: each database gets a trigram index, which finds a text of
  three characters or more without reading the rows. SQLite: an FTS5 table
  with the trigram tokenizer, kept current by triggers, queried with a phrase
  (case-insensitive, as `icontains`). PostgreSQL: a `pg_trgm` GIN index on
  `UPPER(code)`, which serves the ORM's own `icontains` as it is.

One index over both columns was tried on SQLite: a search for the task name
of every schedule then took twice the full read (1.0 to 1.4 s at a million,
reading a million row ids from the index). Shorter texts, and a database
without the index (an SQLite built without FTS5, a PostgreSQL role that may
not create the extension), read every code as before: slower, never wrong.

`ensure_index` runs in migration 0022 and after each `migrate` that applies
this app's migrations: Django's SQLite schema editor rebuilds a table to alter
it, which drops its triggers, and this puts them back.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL

from .models import by_task_names, task_names_in_use

logger = logging.getLogger(__name__)

TABLE = "schedules_schedule"
SEARCH_TABLE = "schedules_schedule_search"
TRIGRAM = 3  # the index finds texts of at least this many characters
INSTALLED_BY = ("schedules", "0022_schedule_search")  # the migration that adds the index
POSTGRES_INDEX = "schedule_code_trgm_idx"

_SQLITE_DDL = [
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {SEARCH_TABLE} USING fts5("
    f"code, content='{TABLE}', content_rowid='id', columnsize=0, tokenize='trigram')",
    f"CREATE TRIGGER IF NOT EXISTS {SEARCH_TABLE}_insert AFTER INSERT ON {TABLE} BEGIN "
    f"INSERT INTO {SEARCH_TABLE}(rowid, code) VALUES (new.id, new.code); END",
    f"CREATE TRIGGER IF NOT EXISTS {SEARCH_TABLE}_delete AFTER DELETE ON {TABLE} BEGIN "
    f"INSERT INTO {SEARCH_TABLE}({SEARCH_TABLE}, rowid, code) "
    "VALUES ('delete', old.id, old.code); END",
    # Only when the code is written: the scheduler's claims update next_run_at.
    f"CREATE TRIGGER IF NOT EXISTS {SEARCH_TABLE}_update AFTER UPDATE OF code ON {TABLE} BEGIN "
    f"INSERT INTO {SEARCH_TABLE}({SEARCH_TABLE}, rowid, code) "
    "VALUES ('delete', old.id, old.code); "
    f"INSERT INTO {SEARCH_TABLE}(rowid, code) VALUES (new.id, new.code); END",
]
_SQLITE_TRIGGERS = {f"{SEARCH_TABLE}_{event}" for event in ("insert", "delete", "update")}

# The SQLite databases (by file) known to hold the index; a miss is looked up again.
_indexed: set[str] = set()


def schedules_matching(schedules: QuerySet, text: str) -> QuerySet:
    """The schedules whose code or task name contains `text`, case-insensitively."""
    names = task_names_in_use(using=schedules.db)
    if names is None:  # too many to name: read every task name
        by_task = Q(task_name__icontains=text)
    else:
        by_task = by_task_names(name for name in names if text.casefold() in name.casefold())
    connection = connections[schedules.db]
    if connection.vendor == "sqlite" and len(text) >= TRIGRAM and _sqlite_indexed(connection):
        phrase = '"' + text.replace('"', '""') + '"'
        found = RawSQL(f"SELECT rowid FROM {SEARCH_TABLE} WHERE {SEARCH_TABLE} MATCH %s", [phrase])
        by_code = Q(pk__in=found)
    else:
        by_code = Q(code__icontains=text)
    return schedules.filter(by_code | by_task)


def _sqlite_indexed(connection: BaseDatabaseWrapper) -> bool:
    name = str(connection.settings_dict["NAME"])
    if name not in _indexed:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [SEARCH_TABLE])
            if cursor.fetchone() is None:
                return False
        _indexed.add(name)
    return True


def ensure_index(connection: BaseDatabaseWrapper) -> None:
    """Create the search index if it is missing (each statement is idempotent)."""
    if TABLE not in connection.introspection.table_names():
        return  # migrated back past the schedules table
    if connection.vendor == "sqlite":
        _ensure_sqlite(connection)
    elif connection.vendor == "postgresql":
        _ensure_postgresql(connection)


def _ensure_sqlite(connection: BaseDatabaseWrapper) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        missing = _SQLITE_TRIGGERS - {name for (name,) in cursor.fetchall()}
        if not missing:
            return
        try:
            for statement in _SQLITE_DDL:
                cursor.execute(statement)
        except DatabaseError as exc:  # an SQLite built without FTS5
            logger.warning("schedule search reads every schedule: no FTS5 index (%s)", exc)
            return
        # New, or its triggers were dropped by a table rebuild: read the rows again.
        cursor.execute(f"INSERT INTO {SEARCH_TABLE}({SEARCH_TABLE}) VALUES ('rebuild')")


def _ensure_postgresql(connection: BaseDatabaseWrapper) -> None:
    # Online where it may be: the schedules stay writable while the index is built.
    online = "" if connection.in_atomic_block else " CONCURRENTLY"
    with connection.cursor() as cursor:
        try:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except DatabaseError as exc:
            logger.warning(
                "schedule search reads every schedule: the pg_trgm extension could not "
                "be created (%s); a superuser can run CREATE EXTENSION pg_trgm",
                exc,
            )
            return
        cursor.execute(
            f"CREATE INDEX{online} IF NOT EXISTS {POSTGRES_INDEX} ON {TABLE} "
            "USING gin (UPPER(code) gin_trgm_ops)"
        )


def drop_index(connection: BaseDatabaseWrapper) -> None:
    """Remove the search index (migration 0022 backwards)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for trigger in sorted(_SQLITE_TRIGGERS):
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            cursor.execute(f"DROP TABLE IF EXISTS {SEARCH_TABLE}")
        elif connection.vendor == "postgresql":
            cursor.execute(f"DROP INDEX IF EXISTS {POSTGRES_INDEX}")
    _indexed.discard(str(connection.settings_dict["NAME"]))
