"""Flags that depend on the code this process runs: orphan, duplicate, invalid."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from .models import Schedule
from .registry import Registry, registry
from .timing import InvalidTrigger


def flags_for(schedule: Schedule, tasks: Registry = registry) -> list[str]:
    flags = []
    status = tasks.status_of(schedule.task_name)
    if status != "ok":
        flags.append(status)
    try:
        schedule.get_trigger()
    except InvalidTrigger:
        flags.append("invalid")
    return flags


def runnable(queryset: QuerySet[Schedule], tasks: Registry = registry) -> QuerySet[Schedule]:
    """Schedules whose task is declared exactly once."""
    return queryset.filter(task_name__in=sorted(tasks.runnable_names()))


def with_flag(queryset: QuerySet[Schedule], flag: str, tasks: Registry = registry):
    if flag == "orphan":
        return queryset.exclude(task_name__in=sorted(tasks.declarations))
    if flag == "duplicate":
        return queryset.filter(task_name__in=sorted(tasks.duplicate_names()))
    raise ValueError(f"unknown flag {flag!r} (orphan or duplicate)")


def declared_q(tasks: Registry = registry) -> Q:
    return Q(task_name__in=sorted(tasks.runnable_names()))
