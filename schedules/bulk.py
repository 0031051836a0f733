"""Row helpers for the few statements that touch hundreds of rows at a time: new
instances built cheaply, an INSERT that returns keys, an UPDATE by key, a lock
that skips what another process holds, and the times of raw rows. Claims,
outcomes, the incident edge and the dashboard's strips share them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import cache, partial
from typing import Any

from django.db import connection, models
from django.db.models import Model
from django.db.models.base import ModelState


def unsaved[M: Model](model: type[M], **values: Any) -> M:
    """A new instance of `model` with `values` set, for the paths that build thousands
    at a time (a burst's runs, a restart's incidents and their timelines).

    Django's keyword __init__ walks every field for each keyword (7 µs an incident
    here), and `copy.copy` of a blank goes through pickling's protocol (10 µs a run);
    taking a blank instance's attributes costs 3 to 4 µs, and a restart builds three
    rows for every schedule. A field whose default is computed (a time, a dict) must be
    given, or every copy would share the blank's value; a name that is no field is
    refused, as Model(**values) refuses it. As for any copy, Django sends no
    pre_init/post_init signal.
    """
    blank, computed, known = _blank(model)
    if not computed <= values.keys() or not values.keys() <= known:
        missing = ", ".join(sorted(computed - values.keys()))
        unknown = ", ".join(sorted(values.keys() - known))
        raise TypeError(
            f"unsaved({model.__name__}): needs {missing or '-'}; unknown {unknown or '-'}"
        )
    instance = model.__new__(model)
    instance.__dict__.update(blank.__dict__)
    instance._state = ModelState()
    for name, value in values.items():
        setattr(instance, name, value)
    return instance


@cache
def _blank(model: type[Model]) -> tuple[Model, frozenset[str], frozenset[str]]:
    """A blank instance; the fields it must be given; the names it may be given (as
    Model(**values) takes them: a field's name, or its column's attribute)."""
    fields = model._meta.concrete_fields
    computed = frozenset(f.name for f in fields if f.has_default() and callable(f.default))
    known = frozenset(name for f in fields for name in (f.name, f.attname))
    return model(), computed, known


def locked_or_skipped(rows: models.QuerySet) -> models.QuerySet:
    """The rows, locked for this transaction; on PostgreSQL those another process has
    locked are left out, not waited for (SQLite's IMMEDIATE transaction holds the
    write lock from BEGIN)."""
    if connection.features.has_select_for_update_skip_locked:
        return rows.select_for_update(skip_locked=True, of=("self",))
    return rows


def stored_moment(value: object) -> datetime | None:
    """A time as the database driver gave it in a raw row, made aware: SQLite's
    driver gives a naive datetime (Django's converter for the column's declared
    type) or ISO text, both in UTC (Django stores UTC)."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        value = datetime.fromisoformat(str(value))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def update_each(model: type[Model], fields: list[str], rows: list[tuple], add: int = 0) -> None:
    """UPDATE rows by primary key with one executemany: each row is (*values, pk).

    The last `add` fields are increments (`field = field + value`). Per-row ORM
    updates, or one UPDATE of CASE expressions, cost more Python than the
    database's own work: 500 outcomes took 0.3 s and 0.8 s that way.
    """
    if not rows:
        return
    quote = connection.ops.quote_name
    columns = [model._meta.get_field(name) for name in fields]
    assignments = [
        f"{quote(f.column)} = {quote(f.column)} + %s" if i >= len(fields) - add else
        f"{quote(f.column)} = %s"
        for i, f in enumerate(columns)
    ]  # fmt: skip
    sql = (
        f"UPDATE {quote(model._meta.db_table)} SET {', '.join(assignments)} "
        f"WHERE {quote(model._meta.pk.column)} = %s"
    )
    prepared = [
        [f.get_db_prep_save(v, connection) for f, v in zip(columns, row[:-1], strict=True)]
        + [row[-1]]
        for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, prepared)


def insert_rows(rows: Sequence[Model]) -> None:
    """INSERT new instances of one model and give each its primary key, like
    `bulk_create` (and, like it, raises IntegrityError for a refused row).

    A burst claims a thousand slots in a pass, and a restart opens a late incident
    on every schedule. `bulk_create` prepares every value through the whole field
    machinery (0.19 s of a 1,000-slot claim's 0.45 s); here each column is prepared
    by the one step its kind needs (datetimes adapted, JSON encoded), and the
    statement is built once per chunk size.
    """
    if not rows:
        return
    model = type(rows[0])
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    if not connection.features.can_return_rows_from_bulk_insert or any(
        f.generated or f.has_db_default() for f in fields
    ) or any(row.pk is not None for row in rows):  # fmt: skip
        # A backend without INSERT ... RETURNING, or what only the ORM's INSERT handles
        # (generated columns, database defaults, chosen keys).
        model._default_manager.bulk_create(rows)
        return
    prepare = [_preparer(f) for f in fields]
    names = [f.attname for f in fields]
    _take_related_keys(rows, [f for f in fields if f.is_relation])
    for field in fields:
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            for row in rows:
                field.pre_save(row, add=True)  # sets the time, as a save would
    quote = connection.ops.quote_name
    head = (
        f"INSERT INTO {quote(model._meta.db_table)} "
        f"({', '.join(quote(f.column) for f in fields)}) VALUES "
    )
    tail = f" RETURNING {quote(model._meta.pk.column)}"
    placeholders = "(" + ", ".join(["%s"] * len(fields)) + ")"
    size = max(1, connection.ops.bulk_batch_size(fields, rows))
    with connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            params = [
                convert(value) if convert else value
                for row in chunk
                for convert, value in zip(prepare, (getattr(row, n) for n in names), strict=True)
            ]
            cursor.execute(head + ", ".join([placeholders] * len(chunk)) + tail, params)
            for row, (pk,) in zip(chunk, cursor.fetchall(), strict=True):
                row.pk = pk
                row._state.adding = False
                row._state.db = connection.alias


def _take_related_keys(rows: Sequence[Model], relations: list[models.Field]) -> None:
    """A relation set to an object that had no key yet (an incident's event, built with
    the incident before either was inserted) takes the object's key now, as
    `bulk_create` does."""
    for field in relations:
        for row in rows:
            if getattr(row, field.attname) is None and field.is_cached(row):
                related = field.get_cached_value(row)
                if related is None:
                    continue
                if related.pk is None:  # as bulk_create refuses: it would be stored as NULL
                    raise ValueError(f"{field.name} of a new {type(row).__name__} is not saved")
                setattr(row, field.attname, related.pk)


def _preparer(field: models.Field) -> Callable[[Any], Any] | None:
    """The one preparation a column's value needs before the database (None: as is)."""
    if isinstance(field, models.DateTimeField):  # always aware: the scheduler's clock is UTC
        if connection.vendor == "sqlite" and connection.timezone is not None:  # USE_TZ
            return partial(_sqlite_moment, connection.timezone)
        return connection.ops.adapt_datetimefield_value
    if isinstance(field, models.JSONField):
        return partial(field.get_db_prep_save, connection=connection)
    if isinstance(field, models.CharField | models.TextField | models.IntegerField
                  | models.BooleanField | models.ForeignKey):  # fmt: skip
        return None
    return partial(field.get_db_prep_save, connection=connection)  # any other kind, in full


def _sqlite_moment(zone: Any, value: datetime | None) -> str | None:
    """What Django's SQLite backend stores for a datetime (the text of its naive time in
    the connection's zone), by the one step a plain value needs: a restart's catch-up
    adapts ten of them for each schedule."""
    if value is None:
        return None
    if value.utcoffset() is not None:
        value = value.astimezone(zone).replace(tzinfo=None)
    return str(value)
