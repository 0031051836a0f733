"""/schedules: list (the list page's filters), show, create, update, delete, the status
actions, reset to the code default, and run now."""

from __future__ import annotations

from dataclasses import asdict
from typing import Literal

from django.db import IntegrityError
from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from ... import services
from ...choices import RunStatus
from ...models import Schedule
from ...registry import OPTION_NAMES, TaskOptions, registry
from ...selectors import LIST_FLAGS, filtered_schedules
from ..auth import ADD, CHANGE, DELETE, OPERATE, VIEW, allowed, caller, require
from ..checks import check_input, parsed_trigger, schedule_for
from ..errors import Problem, error_responses
from ..presenters import run_body, schedule_body
from ..schemas import (
    NO_NUL,
    RunDetailOut,
    RunNowIn,
    ScheduleCreate,
    ScheduleDetailOut,
    ScheduleList,
    ScheduleUpdate,
    StatusName,
)

router = Router(tags=["schedules"])
ERRORS = error_responses(404, 409, 422)
WITH_BODY = error_responses(404, 409, 413, 422)
NEXT_TIMES = 10


class ScheduleFilters(Schema):
    q: str = Field(
        default="", max_length=200, pattern=NO_NUL, description="part of the code or task name"
    )
    status: StatusName | None = None
    outcome: Literal[("never", *RunStatus.values)] | None = None  # type: ignore[valid-type]
    flag: Literal[LIST_FLAGS] | None = None  # type: ignore[valid-type]
    limit: int = Field(default=100, ge=1, le=1000)
    # Past 2**63 - 1 the database refuses the OFFSET itself (a 500); a billion rows is
    # more schedules than any install holds, so a larger offset can only be a mistake.
    offset: int = Field(default=0, ge=0, le=1_000_000_000)


@router.get("/schedules", response={200: ScheduleList, **ERRORS})
def list_schedules(request: HttpRequest, filters: Query[ScheduleFilters]):
    """Schedules by code, with the dashboard list's search and filters."""
    require(request, VIEW)
    params = filters.model_dump(include={"q", "status", "outcome", "flag"}, exclude_none=True)
    schedules = filtered_schedules(params)
    page = schedules[filters.offset : filters.offset + filters.limit]
    return {"count": schedules.count(), "results": [schedule_body(s) for s in page]}


@router.get("/schedules/{code}", response={200: ScheduleDetailOut, **ERRORS})
def show_schedule(request: HttpRequest, code: str):
    """One schedule, with its next fire times."""
    schedule = schedule_for(request, code)
    times = [at for at, _ in schedule.preview_times(NEXT_TIMES, after=timezone.now())]
    return schedule_body(schedule, next_times=times)


@router.post("/schedules", response={201: ScheduleDetailOut, **WITH_BODY}, auth=allowed(VIEW, ADD))
def create_schedule(request: HttpRequest, payload: ScheduleCreate):
    """Create an active schedule. Options left out take the task's declared ones."""
    require(request, VIEW)
    require(request, ADD)
    declaration = registry.get(payload.task_name)
    options = asdict(declaration.options if declaration else TaskOptions())
    options.update(payload.options.model_dump(exclude_unset=True))
    check_input(task_name=payload.task_name, kwargs=payload.kwargs, tz=payload.tz, options=options)
    if Schedule.objects.filter(code=payload.code).exists():
        raise Problem(409, {"code": f"a schedule with code '{payload.code}' already exists"})
    trigger = parsed_trigger(payload.trigger, code=payload.code)
    try:
        schedule = services.schedule_create(
            code=payload.code,
            task_name=payload.task_name,
            trigger=trigger.to_spec(),
            kwargs=payload.kwargs,
            tz=payload.tz,
            by=caller(request),
            via="api",
            **options,
        )
    except IntegrityError:
        raise Problem(
            409, {"code": f"a schedule with code '{payload.code}' already exists"}
        ) from None
    return Status(201, _detail(schedule))


@router.patch(
    "/schedules/{code}", response={200: ScheduleDetailOut, **WITH_BODY}, auth=allowed(VIEW, CHANGE)
)
def update_schedule(request: HttpRequest, code: str, payload: ScheduleUpdate):
    """Change the fields given; a changed trigger moves the next slot (from now)."""
    schedule = schedule_for(request, code, CHANGE)
    given = payload.model_dump(exclude_unset=True)
    for field in ("task_name", "trigger", "kwargs", "tz", "options", "version"):
        if field in given and given[field] is None:
            raise Problem(422, {field: "must not be null"})
    options = {name: getattr(schedule, name) for name in OPTION_NAMES}
    options.update(payload.options.model_dump(exclude_unset=True) if payload.options else {})
    fields = {
        "task_name": given.get("task_name", schedule.task_name),
        "kwargs": given.get("kwargs", schedule.kwargs),
        "tz": given.get("tz", schedule.tz),
    }
    check_input(**fields, options=options, current_task=schedule.task_name)
    trigger = parsed_trigger(given.get("trigger", schedule.trigger), code=schedule.code)
    schedule = services.schedule_update(
        schedule=schedule,
        trigger=trigger.to_spec(),
        expected_version=given.get("version"),
        by=caller(request),
        via="api",
        **fields,
        **options,
    )
    return _detail(schedule)


@router.delete("/schedules/{code}", response={204: None, **ERRORS})
def delete_schedule(request: HttpRequest, code: str):
    """Delete a schedule; its runs stay in the log."""
    services.schedule_delete(
        schedule=schedule_for(request, code, DELETE), by=caller(request), via="api"
    )
    return Status(204, None)


def _status_action(name: str, operation, perm: str, summary: str) -> None:
    @router.post(
        f"/schedules/{{code}}/{name}",
        response={200: ScheduleDetailOut, **ERRORS},
        operation_id=f"{name}_schedule",
        summary=summary,
    )
    def action(request: HttpRequest, code: str):
        schedule = schedule_for(request, code, perm)
        return _detail(operation(schedule=schedule, by=caller(request), via="api"))


_status_action("pause", services.schedule_pause, OPERATE, "Pause a schedule")
_status_action("resume", services.schedule_resume, OPERATE, "Resume (next slot from now)")
_status_action("cancel", services.schedule_cancel, OPERATE, "Cancel a schedule for good")
_status_action(
    "reactivate", services.schedule_reactivate, OPERATE, "Reactivate a completed or cancelled one"
)
_status_action(
    "reset", services.schedule_reset_to_default, CHANGE, "Put the code default back on its record"
)


@router.post(
    "/schedules/{code}/run", response={202: RunDetailOut, **WITH_BODY}, auth=allowed(VIEW, OPERATE)
)
def run_schedule(request: HttpRequest, code: str, payload: RunNowIn | None = None):
    """Queue a manual run now; optional kwargs are merged over the schedule's for this run."""
    schedule = schedule_for(request, code, OPERATE)
    kwargs = payload.kwargs if payload is not None else None
    follow_ups = payload.follow_ups if payload is not None else True
    run = services.schedule_run_now(
        schedule=schedule, by=caller(request), via="api", kwargs=kwargs, follow_ups=follow_ups
    )
    return Status(202, run_body(run, detail=True))


def _detail(schedule: Schedule) -> dict:
    times = [at for at, _ in schedule.preview_times(NEXT_TIMES, after=timezone.now())]
    return schedule_body(schedule, next_times=times)
