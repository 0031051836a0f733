"""Records as the API's response bodies (the CLI's JSON, plus ids and details)."""

from __future__ import annotations

import inspect
from dataclasses import asdict
from datetime import datetime
from typing import Any

from ..models import Run, Schedule
from ..presenters import run_data, schedule_data
from ..registry import TaskDeclaration


def schedule_body(schedule: Schedule, *, next_times: list[datetime] | None = None) -> dict:
    body: dict[str, Any] = {
        "id": schedule.pk,
        "version": schedule.version,
        **schedule_data(schedule),
    }
    if next_times is not None:
        body["next_fire_times"] = next_times
    return body


def run_body(run: Run, *, detail: bool = False) -> dict:
    body = {
        **run_data(run, with_result=detail),
        "schedule_id": run.schedule_id,
        "requested_by": run.requested_by.get_username() if run.requested_by else None,
    }
    if detail:
        body["kwargs"] = run.kwargs
        body["traceback"] = run.traceback or None
    return body


def task_body(declaration: TaskDeclaration, *, duplicate: bool) -> dict:
    trigger = declaration.default_trigger
    return {
        "name": declaration.name,
        "qualname": declaration.qualname,
        "is_async": declaration.is_async,
        "isolation": declaration.isolation,
        "duplicate": duplicate,
        "problems": list(declaration.problems),
        "default_trigger": trigger.to_spec() if trigger is not None else None,
        "default_description": trigger.describe() if trigger is not None else None,
        "options": asdict(declaration.options),
        "parameters": parameters(declaration),
    }


def parameters(declaration: TaskDeclaration) -> list[str]:
    """The task's parameters as a caller writes them: `region='eu'`, `**kwargs`."""
    shown = []
    for param in inspect.signature(declaration.func).parameters.values():
        text = param.name
        if param.kind is param.VAR_POSITIONAL:
            text = f"*{text}"
        elif param.kind is param.VAR_KEYWORD:
            text = f"**{text}"
        elif param.default is not param.empty:
            text = f"{text}={param.default!r}"
        shown.append(text)
    return shown
