"""Flags that depend on the code this process runs: orphan, duplicate, invalid.

The dashboard, the CLI and the API show a schedule's flags through `describe`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .models import Schedule
from .registry import Registry, registry
from .timing import InvalidTrigger

CONSEQUENCE = {
    "orphan": "it never runs, and the schedule is kept until someone deletes it",
    "duplicate": "none of the declarations runs until all but one are renamed",
}


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
        flags.append(Flag("invalid", f"The trigger does not parse ({exc}); it never fires."))
    return text, flags
