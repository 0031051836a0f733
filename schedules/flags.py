"""Flags that depend on the code this process runs: orphan, duplicate, invalid."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from .models import Schedule
from .registry import Registry, registry
from .timing import InvalidTrigger


@dataclass(frozen=True)
class Flag:
    name: str
    reason: str


def describe(schedule: Schedule, tasks: Registry = registry) -> tuple[str, list[Flag]]:
    """The schedule's trigger text and its flags, each with the reason an operator reads."""
    found = tasks.declarations.get(schedule.task_name, [])
    flags = []
    if not found:
        flags.append(
            Flag(
                "orphan",
                f"No code declares task '{schedule.task_name}': this schedule never runs. "
                "It is kept until someone deletes it.",
            )
        )
    elif len(found) > 1:
        modules = ", ".join(d.qualname for d in found)
        flags.append(
            Flag(
                "duplicate",
                f"Task '{schedule.task_name}' is declared more than once ({modules}): "
                "none of them runs until one is renamed.",
            )
        )
    try:
        text = schedule.get_trigger().describe()
    except InvalidTrigger as exc:
        text = f"invalid trigger: {exc}"
        flags.append(Flag("invalid", f"The trigger does not parse ({exc}); it never fires."))
    return text, flags


def with_flag(queryset: QuerySet[Schedule], flag: str, tasks: Registry = registry):
    if flag == "orphan":
        return queryset.exclude(task_name__in=sorted(tasks.declarations))
    if flag == "duplicate":
        return queryset.filter(task_name__in=sorted(tasks.duplicate_names()))
    raise ValueError(f"unknown flag {flag!r} (orphan or duplicate)")
