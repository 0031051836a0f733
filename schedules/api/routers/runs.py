"""/runs: the run log with filters and cursor pagination, one run in full, its output,
cancel."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from urllib.parse import urlencode

from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Query, Router, Schema

from ... import services
from ...models import Run, RunOutput, RunStatus
from ...params import parse_id
from ...run_filters import converts_to_utc
from ...selectors import filtered_runs
from ..auth import OPERATE, VIEW, caller, require
from ..errors import Problem, error_responses
from ..presenters import run_body
from ..schemas import NO_NUL, ReasonName, RunDetailOut, RunOutputOut, RunPage, RunStatusName

router = Router(tags=["runs"])
ERRORS = error_responses(404, 409, 422)


class RunFilters(Schema):
    status: list[RunStatusName] = Field(default_factory=list, description="repeat for several")
    task: str | None = Field(
        default=None, max_length=200, pattern=NO_NUL, description="a task name"
    )
    schedule: str | None = Field(
        default=None, max_length=200, pattern=NO_NUL, description="a schedule code"
    )
    reason: list[ReasonName] = Field(default_factory=list, description="repeat for several")
    since: datetime | None = Field(default=None, description="queued at or after (ISO-8601)")
    until: datetime | None = Field(default=None, description="queued before (ISO-8601)")
    limit: int = Field(default=50, ge=1, le=500)
    cursor: str | None = Field(default=None, max_length=64, description="from `next_cursor`")


@router.get("/runs", response={200: RunPage, **ERRORS})
def list_runs(request: HttpRequest, filters: Query[RunFilters]):
    """Runs, newest first, a page at a time: follow `next` until it is null."""
    require(request, VIEW)
    for name in ("since", "until"):
        value = getattr(filters, name)
        if value is not None and value.utcoffset() is None:
            raise Problem(422, {name: "give a time zone offset, such as 2026-06-01T12:00:00Z"})
        if value is not None and not converts_to_utc(value):
            raise Problem(422, {name: "out of the range of dates"})
    runs = filtered_runs(
        statuses=filters.status,
        task_name=filters.task,
        schedule_code=filters.schedule,
        reasons=filters.reason,
        since=filters.since,
        until=filters.until,
    ).select_related("requested_by")
    if filters.cursor:
        runs = runs.filter(pk__lt=_decode(filters.cursor))
    page = list(runs[: filters.limit + 1])
    more = len(page) > filters.limit
    page = page[: filters.limit]
    cursor = _encode(page[-1].pk) if more else None
    return {
        "results": [run_body(run) for run in page],
        "next_cursor": cursor,
        "next": _next_url(request, cursor) if cursor else None,
    }


@router.get("/runs/{int:run_id}", response={200: RunDetailOut, **ERRORS})
def show_run(request: HttpRequest, run_id: int):
    """One run in full: kwargs, result, error and traceback."""
    return run_body(_run_for(request, run_id, VIEW), detail=True)


@router.get("/runs/{int:run_id}/output", response={200: RunOutputOut, **ERRORS})
def show_run_output(request: HttpRequest, run_id: int):
    """What one run printed and logged, as saved so far (every few seconds while it runs)."""
    run = _run_for(request, run_id, VIEW)
    output = RunOutput.objects.filter(run=run).first()
    return {
        "run_id": run.pk,
        "status": run.status,
        "finished": run.is_finished and not _may_still_write(run),
        "text": output.text if output else "",
        "total": output.total if output else 0,
        "cut": output.cut if output else 0,
        "updated_at": output.updated_at if output else None,
    }


@router.post("/runs/{int:run_id}/cancel", response={200: RunDetailOut, **ERRORS})
def cancel_run(request: HttpRequest, run_id: int):
    """Cancel a queued or running run (a running one is stopped by its scheduler)."""
    run = services.run_cancel(run=_run_for(request, run_id, OPERATE), by=caller(request), via="api")
    return run_body(run, detail=True)


# Seconds a run cancelled while it ran may still add its last lines: the cancel is
# recorded at once, and its scheduler then stops the body (a kill grace of its own) and
# saves the output with the outcome it writes, which is gathered for up to 2 s.
OUTPUT_SETTLES = 10.0


def _may_still_write(run: Run) -> bool:
    """Whether the body of a run recorded cancelled may still be executing somewhere.

    Every other ending is written by the process that ran the body once it ended, or
    by recovery once that process was gone; a cancel (an operator's, a replace) is
    written by another process while the body runs."""
    if run.status != RunStatus.CANCELLED or run.started_at is None or run.finished_at is None:
        return False
    return (timezone.now() - run.finished_at).total_seconds() < OUTPUT_SETTLES


def _run_for(request: HttpRequest, run_id: int, perm: str) -> Run:
    require(request, VIEW)
    run = Run.objects.select_related("requested_by").filter(pk=run_id).first()
    if run is None:
        raise Problem(404, {None: f"no run #{run_id}"})
    require(request, perm)
    return run


def _encode(run_id: int) -> str:
    return base64.urlsafe_b64encode(f"run:{run_id}".encode()).decode().rstrip("=")


def _decode(cursor: str) -> int:
    """The run id a cursor stands for; 422 naming `cursor` if it is not one of ours."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, _, number = text.partition(":")
        run_id = parse_id(number)
        # Exactly as _encode writes one: ASCII digits, no leading zero, a valid id.
        if kind == "run" and run_id is not None and number == str(run_id):
            return run_id
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise Problem(422, {"cursor": "not a cursor this API gave out"})


def _next_url(request: HttpRequest, cursor: str) -> str:
    params = [(k, v) for k, values in request.GET.lists() if k != "cursor" for v in values]
    return request.build_absolute_uri(f"{request.path}?{urlencode([*params, ('cursor', cursor)])}")
