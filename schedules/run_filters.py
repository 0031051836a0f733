"""The runs page's filters: parsed once, applied to the database and to live events alike.

A filter is status, task, schedule code, reason, a time range (over when the
run was queued) and a search in the error text. The page, its live stream,
the export and the CLI read runs through `RunFilters`, so "runs matching this
filter" means the same thing everywhere. Nothing here raises on bad input:
an unknown value is dropped and named in `problems` for the page to show.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL

from .choices import ERROR_OUTCOMES, PROBLEM_STATUSES, RunReason, RunStatus
from .models import Run

WINDOWS = {"15m": 15 * 60, "1h": 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400}
ERRORS = "errors"  # a status value: failed, timed out or interrupted
MAX_TEXT = 200

# run_problem_idx's condition as SQL (constant values, nothing from a request).
PROBLEM_CONDITION = RawSQL(
    '"status" IN (' + ", ".join(f"'{s}'" for s in PROBLEM_STATUSES) + ")",
    [],
    output_field=BooleanField(),
)

# run_unscheduled_idx's condition, in the form Django writes it for ~Q(reason=...).
UNSCHEDULED_CONDITION = RawSQL("NOT (\"reason\" = 'scheduled')", [], output_field=BooleanField())

# The columns a page, a stream and an export read (never the output, result or traceback).
LIST_FIELDS = (
    "id", "schedule_id", "schedule_code", "task_name", "reason", "slot", "attempt", "status",
    "queued_at", "started_at", "finished_at", "error", "scheduler", "requested_by_id",
)  # fmt: skip


def clean_text(value: object) -> str:
    """A query parameter as text for a filter: no NUL (PostgreSQL text cannot hold it),
    trimmed, and no longer than any code or task name."""
    return str(value or "").replace("\x00", "").strip()[:MAX_TEXT]


def converts_to_utc(moment: datetime) -> bool:
    """Whether a moment has a UTC time: one a few hours from year 1 or 9999 may not, and
    the database backends convert every filter's time to UTC (OverflowError, a 500)."""
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return False
    return True


@dataclass
class RunFilters:
    statuses: list[str] = field(default_factory=list)
    task: str = ""
    schedule: str = ""  # a schedule code: runs of deleted schedules keep theirs
    reason: str = ""
    since: datetime | None = None
    until: datetime | None = None
    search: str = ""
    window: str = ""
    problems: list[str] = field(default_factory=list)

    @classmethod
    def from_params(
        cls, params: Mapping[str, Any], *, now: datetime, zone: tzinfo = UTC
    ) -> RunFilters:
        """From a query string (a QueryDict or a dict); times without an offset are in `zone`."""
        found = cls()
        getlist = getattr(params, "getlist", None)
        raw = getlist("status") if getlist else params.get("status") or []
        for status in [raw] if isinstance(raw, str) else raw:
            status = clean_text(status)
            if status in (*RunStatus.values, ERRORS):
                found.statuses.append(status)
            elif status:
                found.problems.append(f"unknown status {status!r}")
        found.task = clean_text(params.get("task"))
        found.schedule = clean_text(params.get("schedule"))
        reason = clean_text(params.get("reason"))
        if reason in RunReason.values:
            found.reason = reason
        elif reason:
            found.problems.append(f"unknown reason {reason!r}")
        found.search = clean_text(params.get("q"))
        window = clean_text(params.get("window"))
        if window in WINDOWS:
            found.window = window
            found.since = now - timedelta(seconds=WINDOWS[window])
        elif window:
            found.problems.append(f"unknown time window {window!r} ({', '.join(WINDOWS)})")
        for name in ("since", "until"):
            text = clean_text(params.get(name))
            if not text or (name == "since" and found.since):
                continue
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                found.problems.append(f"{name}: not a date and time ({text!r})")
                continue
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=zone)
            if not converts_to_utc(moment):
                found.problems.append(f"{name}: out of the range of dates ({text!r})")
                continue
            setattr(found, name, moment)
        return found

    @property
    def live(self) -> bool:
        """New runs can match: the range is open towards now."""
        return self.until is None

    def status_values(self) -> list[str]:
        values: list[str] = []
        for status in self.statuses:
            values.extend(ERROR_OUTCOMES if status == ERRORS else [status])
        return sorted(set(values))

    def apply(self, runs: QuerySet[Run]) -> QuerySet[Run]:
        if self.statuses:
            values = self.status_values()
            runs = runs.filter(status__in=values)
            if set(values) <= set(PROBLEM_STATUSES):
                # The index's own condition, word for word and with its values
                # inline: SQLite uses a partial index only for a query that repeats
                # it (PostgreSQL proves the implication itself).
                runs = runs.filter(PROBLEM_CONDITION)
        if self.task:
            runs = runs.filter(task_name=self.task)
        if self.schedule:
            runs = runs.filter(schedule_code=self.schedule)
        if self.reason:
            runs = runs.filter(reason=self.reason)
            if self.reason != RunReason.SCHEDULED:
                runs = runs.filter(UNSCHEDULED_CONDITION)  # run_unscheduled_idx, as above
        if self.since:
            runs = runs.filter(queued_at__gte=self.since)
        if self.until:
            runs = runs.filter(queued_at__lt=self.until)
        if self.search:
            runs = runs.filter(error__icontains=self.search)
        return runs

    def queryset(self) -> QuerySet[Run]:
        """Matching runs, newest first, with the list's columns only."""
        return self.apply(Run.objects.all()).only(*LIST_FIELDS).order_by("-queued_at", "-pk")

    def ordered(self) -> QuerySet[Run]:
        """Matching runs, newest first, every column (exports pick theirs)."""
        return self.apply(Run.objects.all()).order_by("-queued_at", "-pk")

    def matches(self, run: Any) -> bool:
        """Whether a run (or a live RunEvent) passes the filter, checked in Python."""
        if self.statuses and run.status not in self.status_values():
            return False
        if self.task and run.task_name != self.task:
            return False
        if self.schedule and run.schedule_code != self.schedule:
            return False
        if self.reason and run.reason != self.reason:
            return False
        queued = run.queued_at
        if self.since and (queued is None or queued < self.since):
            return False
        if self.until and (queued is None or queued >= self.until):
            return False
        return not self.search or self.search.casefold() in (run.error or "").casefold()

    def query(self) -> dict[str, Any]:
        """The filter as query parameters (for links, the export and the stream)."""
        params: dict[str, Any] = {}
        if self.statuses:
            params["status"] = list(self.statuses)
        for name, value in (("task", self.task), ("schedule", self.schedule),
                            ("reason", self.reason), ("q", self.search)):  # fmt: skip
            if value:
                params[name] = value
        if self.window:
            params["window"] = self.window
        elif self.since:
            params["since"] = self.since.isoformat()
        if self.until:
            params["until"] = self.until.isoformat()
        return params


# ---------------------------------------------------------------- cursor pages


def encode_cursor(row: Any, field: str = "queued_at") -> str:
    """An opaque position after `row` in newest-first order of (`field`, pk)."""
    raw = f"{getattr(row, field).isoformat()}|{row.pk}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int] | None:
    """(queued_at, pk) from a cursor, or None for anything that is not one."""
    try:
        raw = base64.urlsafe_b64decode(cursor[:200] + "=" * (-len(cursor[:200]) % 4)).decode()
        moment, pk = raw.split("|")
        when, number = datetime.fromisoformat(moment), int(pk)
    except (ValueError, UnicodeDecodeError):
        return None
    if when.tzinfo is None or not 0 < number < 2**63:
        return None
    return when, number


def page_after(
    rows: QuerySet, cursor: str | None, size: int, field: str = "queued_at"
) -> tuple[list, str | None]:
    """One page of `rows` (ordered newest first by `field`, then pk) after the
    cursor, and the next page's cursor.

    Keyset pagination: the same cost for the first page and the ten-thousandth,
    and rows recorded meanwhile never shift a page (one query).
    """
    position = decode_cursor(cursor) if cursor else None
    if position is not None:
        at, pk = position
        rows = rows.filter(Q(**{f"{field}__lt": at}) | Q(**{field: at, "pk__lt": pk}))
    found = list(rows[: size + 1])
    if len(found) > size:
        return found[:size], encode_cursor(found[size - 1], field)
    return found, None
