"""Checks of an operator's schedule input, applied alike by the form, the API and the CLI.

The model's `full_clean()` (called by the services) checks what a row must
be; these check what an operator may ask for: a task this code can run,
kwargs that fit its signature, a known zone, options within sane limits.
Each check returns problems by field name, in the words the operator reads.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from functools import lru_cache
from zoneinfo import available_timezones

from . import validation
from .choices import Dispatch, Misfire, Overlap, RateMode
from .registry import Registry, registry
from .scheduler import dispatch

# Inclusive bounds of the numeric options: beyond these a value is a typo, and
# an integer past the database's range would fail at save time instead.
DAY = 86_400.0
OPTION_LIMITS: dict[str, tuple[float, float]] = {
    "timeout": (0.0, 30 * DAY),  # 0: no timeout; None (not checked): the default
    "max_attempts": (1, 100),
    "retry_delay": (0.0, 30 * DAY),
    "max_instances": (1, 1000),
    "misfire_grace": (0.0, 365 * DAY),
    "priority": (-1_000_000, 1_000_000),
    # None: no limit. Period 0 failed every run after the first (a division by it),
    # and a negative limit or period switched the limit off.
    "rate_limit": (1, 1_000_000),
    "rate_period": (0.001, 365 * DAY),
}
OPTION_CHOICES: dict[str, list[str]] = {
    "overlap": list(Overlap.values),
    "misfire": list(Misfire.values),
    "dispatch": list(Dispatch.values),
    "rate_mode": list(RateMode.values),
}
INTEGER_OPTIONS = ("max_attempts", "max_instances", "priority", "rate_limit")
# Options whose None means "the default" or "none": not checked.
NULLABLE_OPTIONS = ("timeout", "rate_limit")


@lru_cache(maxsize=1)
def zones() -> frozenset[str]:
    return frozenset(available_timezones()) | {"UTC"}


def zone_problem(tz: str) -> str:
    return "" if not tz or tz in zones() else f"unknown time zone '{tz}'"


def task_problem(task_name: str, *, current: str | None = None, tasks: Registry = registry) -> str:
    """Why a schedule may not name this task; an orphan keeps its own name until changed."""
    if task_name == current:
        return ""
    if not task_name:
        return "name a task"
    return tasks.refusal(task_name)


def json_problem(value: object) -> str:
    """What in a JSON value no database stores: the NUL character in a string
    (PostgreSQL text and jsonb refuse it) and NaN or Infinity (not JSON; jsonb
    refuses them). Walked without recursion, so no nesting is too deep to check."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return "must not contain the NUL character (\\u0000)"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "must not contain NaN or Infinity"
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return ""


def kwargs_problem(task_name: str, kwargs: object, *, tasks: Registry = registry) -> str:
    """Why these kwargs cannot be passed to the task: the kwargs rules (the scheduler
    refuses a run that breaks them), then the task's signature."""
    if not isinstance(kwargs, dict):
        return 'must be a JSON object, such as {"region": "eu"}'
    rules = validation.kwargs_problem(kwargs)
    if rules:
        return rules.removeprefix("kwargs: ")  # the caller names the field
    declaration = tasks.get(task_name)
    if declaration is None:
        return ""  # an orphan's kwargs cannot be checked; it never runs anyway
    try:
        inspect.signature(declaration.func).bind(**kwargs)
    except TypeError as exc:
        return f"does not fit {declaration.name}: {exc}"
    return ""


def option_problems(options: Mapping[str, object]) -> dict[str, str]:
    """Problems of the given execution options (absent ones are not checked)."""
    problems = {}
    for name, (low, high) in OPTION_LIMITS.items():
        if name not in options or (name in NULLABLE_OPTIONS and options[name] is None):
            continue
        value = options[name]
        integer = name in INTEGER_OPTIONS
        if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
            problems[name] = "enter a whole number" if integer else "enter a number of seconds"
        elif not low <= value <= high:
            problems[name] = f"must be from {_number(low)} to {_number(high)}"
    for name, choices in OPTION_CHOICES.items():
        if name in options and options[name] not in choices:
            problems[name] = f"must be one of {', '.join(choices)}"
    return problems


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def schedule_problems(
    *,
    task_name: str,
    kwargs: object,
    tz: str = "",
    options: Mapping[str, object] | None = None,
    current_task: str | None = None,
    tasks: Registry = registry,
) -> dict[str, str]:
    """Every problem of a schedule's input, by field (task_name, kwargs, tz, options)."""
    problems = {
        "task_name": task_problem(task_name, current=current_task, tasks=tasks),
        "kwargs": kwargs_problem(task_name, kwargs, tasks=tasks),
        "tz": zone_problem(tz),
    }
    problems.update(option_problems(options or {}))
    if (options or {}).get("dispatch") == Dispatch.ENQUEUE and not problems.get("dispatch"):
        problems["dispatch"] = dispatch.enqueue_problem(task_name)
    return {field: problem for field, problem in problems.items() if problem}
