"""The run log as files: JSON Lines and CSV, streamed row by row.

The runs page's export and `manage.py schedules runs --format jsonl|csv`
write the same columns for the same filter (run_filters.RunFilters). Rows
are read in chunks and written as they come, so an export of a million runs
holds a chunk in memory, not the log. JSON Lines is exact (one JSON object a
line, the original design's run log); in CSV, kwargs and result are JSON
text, and a cell that begins with = + - @ (or a tab or carriage return) gets
a leading ' so that a spreadsheet shows it instead of running it as a formula.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import QuerySet

from .models import Run
from .presenters import run_data

COLUMNS = (
    "id", "schedule_id", "code", "task_name", "status", "reason", "attempt", "slot",
    "queued_at", "started_at", "finished_at", "duration_ms", "error", "scheduler",
    "requested_by", "cancelled_by", "parent_id", "depth", "kwargs", "result",
)  # fmt: skip
FIELDS = (
    "id", "schedule_id", "schedule_code", "task_name", "status", "reason", "attempt", "slot",
    "queued_at", "started_at", "finished_at", "error", "scheduler", "requested_by__username",
    "cancelled_by", "parent_id", "depth", "kwargs", "result",
)  # fmt: skip
CHUNK = 2000
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def export_rows(runs: QuerySet[Run]) -> Iterator[dict[str, Any]]:
    """Each run as a plain dict of COLUMNS, read CHUNK rows at a time."""
    runs = runs.select_related("requested_by").only(*FIELDS)
    for run in runs.iterator(chunk_size=CHUNK):
        # The API's shape of a run, plus what a file of runs needs besides.
        row = run_data(run)
        row["schedule_id"] = run.schedule_id
        row["requested_by"] = run.requested_by.get_username() if run.requested_by else None
        row["kwargs"] = run.kwargs
        yield {name: row[name] for name in COLUMNS}


def jsonl_lines(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False, default=repr) + "\n"


def csv_lines(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_cell(row[name]) for name in COLUMNS])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list | bool):
        text = json.dumps(value, ensure_ascii=False, default=repr)
    else:
        text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_value(cell: str) -> str:
    """A CSV cell as it was before the formula guard (for readers of the export)."""
    if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS):
        return cell[1:]
    return cell


LINES = {"jsonl": jsonl_lines, "csv": csv_lines}
CONTENT_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}
