"""Flags that depend on the code this process runs: orphan, duplicate, invalid, kwargs.

The dashboard, the CLI and the API show a schedule's flags through `describe`,
which never raises, whatever a record holds: a page lists even a broken schedule.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .models import Schedule
from .registry import Registry, registry
from .timing import InvalidTrigger
from .validation import kwargs_fit, printable

logger = logging.getLogger(__name__)

CONSEQUENCE = {
    "orphan": "it never runs, and the schedule is kept until someone deletes it",
    "duplicate": "none of the declarations runs until all but one are renamed",
}
FLAG_NAMES = ("orphan", "duplicate", "invalid", "kwargs")


@dataclass(frozen=True)
class Flag:
    name: str
    reason: str


def describe(schedule: Schedule, tasks: Registry = registry) -> tuple[str, list[Flag]]:
    """The schedule's trigger text and its flags, each with the reason an operator reads."""
    flags = []
    refusal = tasks.refusal(schedule.task_name)
    if refusal:
        name = tasks.status_of(schedule.task_name)
        flags.append(Flag(name, f"The {refusal}: {CONSEQUENCE[name]}."))
    try:
        text = schedule.get_trigger().describe()
    except InvalidTrigger as exc:
        text = f"invalid trigger: {exc}"
        flags.append(Flag("invalid", f"The trigger cannot be used ({exc}); it never fires."))
    except Exception as exc:  # a page must render whatever is stored
        logger.warning("schedule %s: trigger not described: %r", schedule.pk, exc)
        text = "invalid trigger"
        flags.append(Flag("invalid", "The trigger cannot be used; it never fires."))
    else:
        if schedule.invalid_reason:
            flags.append(
                Flag(
                    "invalid",
                    f"Parked by the scheduler: {schedule.invalid_reason}; fix and save it.",
                )
            )
    try:
        problem = kwargs_fit(schedule.task_name, schedule.kwargs, tasks)
    except Exception as exc:  # noqa: BLE001 - as above
        problem = f"kwargs: cannot be checked ({type(exc).__name__})"
    if problem:
        flags.append(Flag("kwargs", f"{problem}: its runs fail until the kwargs are fixed."))
    return printable(text), [Flag(f.name, printable(f.reason)) for f in flags]
