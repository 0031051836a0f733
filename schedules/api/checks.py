"""Access and input checks shared by the routers: a schedule by code (404/403 as the
dashboard), a trigger spec parsed to a field error, operator input to field errors."""

from __future__ import annotations

import logging

from django.http import HttpRequest

from .. import inputs, services
from ..choices import priority_value
from ..models import Schedule
from ..timing import InvalidTrigger, Trigger
from .auth import VIEW, require
from .errors import Problem

logger = logging.getLogger(__name__)


def schedule_for(request: HttpRequest, code: str, perm: str = VIEW) -> Schedule:
    """The schedule, if the caller may view it and has `perm`: 404 unknown, 403 not allowed."""
    require(request, VIEW)
    schedule = None if "\x00" in code else Schedule.objects.filter(code=code).first()
    if schedule is None:
        raise Problem(404, {None: f"no schedule with code '{code}'"})
    require(request, perm)
    return schedule


def parsed_trigger(spec: dict, *, code: str, field: str = "trigger") -> Trigger:
    """The trigger of a spec, or a 422 naming `field`.

    The timing engine raises InvalidTrigger for every bad spec it foresees;
    anything else it raises on hostile input is still the caller's bad input,
    so it is reported the same way (and logged, to be given a proper message).
    """
    if inputs.json_problem(spec):
        raise Problem(422, {field: inputs.json_problem(spec)})
    try:
        return services.normalize_trigger(spec, code=code)
    except InvalidTrigger as exc:
        raise Problem(422, {field: str(exc).removeprefix("trigger: ")}) from None
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        logger.warning("trigger spec rejected by %s: %s", type(exc).__name__, exc)
        raise Problem(422, {field: f"not a valid trigger spec ({exc})"}) from None


def check_input(**fields: object) -> None:
    """422 with every problem of a schedule's input (see schedules.inputs); a priority
    given by level name becomes its number in `options`."""
    options = fields.pop("options", None) or {}
    if isinstance(options.get("priority"), str):
        try:
            options["priority"] = priority_value(options["priority"])
        except ValueError as exc:
            raise Problem(422, {"options.priority": str(exc)}) from None
    problems = inputs.schedule_problems(**fields, options=options)  # type: ignore[arg-type]
    if problems:
        raise Problem(422, {_path(name): text for name, text in problems.items()})


def _path(name: str) -> str:
    return (
        f"options.{name}" if name in inputs.OPTION_LIMITS or name in inputs.OPTION_CHOICES else name
    )
