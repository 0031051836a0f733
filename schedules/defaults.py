"""Code defaults: the schedule a task's declaration carries (`every=` / `cron=`) as a record.

The record is created when missing and follows the code while no operator
has changed it (`source="code"`); once an operator edits it, the record wins
(`source="operator"`) and its page shows how it differs from the code. Reset
puts the code's trigger and options back on that one record; deleting it has
the record made again at the next sync.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from .models import Schedule, ScheduleSource, ScheduleStatus
from .registry import Registry, TaskDeclaration, registry
from .timing import InvalidTrigger, display_zone
from .validation import parse_trigger
from .wake import wake_schedulers

logger = logging.getLogger(__name__)


class NoCodeDefault(ValueError):
    """The schedule is not the record of a task's code default."""


def declared(tasks: Registry = registry) -> list[TaskDeclaration]:
    """Runnable declarations that carry a valid code default."""
    runnable = tasks.runnable_names()
    return [d for d in tasks.all() if d.default_trigger and not d.problems and d.name in runnable]


def is_default_record(schedule: Schedule, tasks: Registry = registry) -> bool:
    """The record a task's code default made: named after its task, which declares one."""
    declaration = tasks.get(schedule.task_name)
    return (
        schedule.code == schedule.task_name
        and declaration is not None
        and declaration.default_trigger is not None
        and not declaration.problems
    )


def code_values(declaration: TaskDeclaration) -> dict:
    """The record's fields as the code declares them; the trigger passes the same
    validation gate (limits included) as every other trigger."""
    trigger = parse_trigger(declaration.default_trigger.to_spec())
    return {"trigger": trigger.to_spec(), **asdict(declaration.options)}


def differences(schedule: Schedule, tasks: Registry = registry) -> dict[str, tuple]:
    """field -> (the record's value, the code's value), for a code-default record."""
    if not is_default_record(schedule, tasks):
        return {}
    wanted = code_values(tasks.get(schedule.task_name))
    return {
        field: (getattr(schedule, field), value)
        for field, value in wanted.items()
        if getattr(schedule, field) != value
    }


def sync_code_defaults(*, tasks: Registry = registry, now: datetime | None = None) -> list[str]:
    """Create every missing code-default record, and bring the records no operator
    changed up to date with the code. Returns the codes created or updated."""
    now = now or timezone.now()
    touched = []
    candidates = declared(tasks)
    existing = {s.code: s for s in Schedule.objects.filter(code__in=[d.name for d in candidates])}
    for declaration in candidates:
        record = existing.get(declaration.name)
        try:
            if record is None:
                with transaction.atomic():
                    _create(declaration, now)
                touched.append(declaration.name)
            elif record.source == ScheduleSource.CODE and _follow(record, declaration, now):
                touched.append(declaration.name)
        except IntegrityError:
            pass  # another scheduler created it first
        except InvalidTrigger as exc:
            if declaration.name not in _REFUSED:
                _REFUSED.add(declaration.name)
                logger.error("code default of task %s refused: %s", declaration.name, exc)
    return touched


# Code defaults refused by the gate, so each is logged once per process.
_REFUSED: set[str] = set()


def _create(declaration: TaskDeclaration, now: datetime) -> Schedule:
    trigger = declaration.default_trigger
    return Schedule.objects.create(
        code=declaration.name,
        task_name=declaration.name,
        tz=display_zone(trigger),
        source=ScheduleSource.CODE,
        next_run_at=trigger.next_fire(now),
        **code_values(declaration),
    )


def _follow(record: Schedule, declaration: TaskDeclaration, now: datetime) -> bool:
    """Update a record no operator changed to what the code now declares."""
    wanted = code_values(declaration)
    changed = {f: v for f, v in wanted.items() if getattr(record, f) != v}
    if not changed:
        return False
    update = dict(changed, updated_at=now)  # a held run reads its schedule again (queued.py)
    if "trigger" in changed:
        update["tz"] = display_zone(declaration.default_trigger)
        if record.status == ScheduleStatus.ACTIVE:
            update["next_run_at"] = declaration.default_trigger.next_fire(now)
    # Only if no operator edited it in between (the source is still "code").
    Schedule.objects.filter(pk=record.pk, source=ScheduleSource.CODE).update(**update)
    return True


def reset_to_default(*, schedule: Schedule, tasks: Registry = registry) -> Schedule:
    """Put the code's trigger and options back on a code-default record.

    The status is kept (a paused record stays paused); no other record is
    touched. Refused for schedules that are not a task's code-default record.
    """
    if not is_default_record(schedule, tasks):
        raise NoCodeDefault(
            f"'{schedule.code}' is not a code-default record: only the schedule named after "
            f"a task that declares every= or cron= can be reset"
        )
    declaration = tasks.get(schedule.task_name)
    with transaction.atomic():
        record = Schedule.objects.select_for_update().get(pk=schedule.pk)
        for field, value in code_values(declaration).items():
            setattr(record, field, value)
        record.tz = display_zone(declaration.default_trigger)
        record.source = ScheduleSource.CODE
        if record.status == ScheduleStatus.ACTIVE:
            record.next_run_at = declaration.default_trigger.next_fire(timezone.now())
        record.save()
    wake_schedulers()
    return record
