"""Operations that change schedules and queue runs, as operators and code ask for them.

Views, the admin, the CLI and the scheduler's code-default sync call these.
The scheduler's own bookkeeping (claiming slots, recording outcomes, queuing
retries, completing a one-shot after its last run) lives in `scheduler/`.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from .alerts import record as alerts
from .models import Run, RunReason, RunStatus, Schedule, ScheduleSource, ScheduleStatus
from .registry import Registry, TaskDeclaration, registry
from .scheduler import dispatch
from .timing import InvalidTrigger, Trigger, trigger_from_spec
from .wake import wake_schedulers

logger = logging.getLogger(__name__)

# Allowed status transitions; anything else is refused with a reason.
TRANSITIONS: dict[str, set[str]] = {
    ScheduleStatus.ACTIVE: {
        ScheduleStatus.PAUSED,
        ScheduleStatus.CANCELLED,
        ScheduleStatus.COMPLETED,
    },
    ScheduleStatus.PAUSED: {ScheduleStatus.ACTIVE, ScheduleStatus.CANCELLED},
    ScheduleStatus.CANCELLED: set(),
    ScheduleStatus.COMPLETED: set(),
}
_VERBS = {
    ScheduleStatus.ACTIVE: "resume",
    ScheduleStatus.PAUSED: "pause",
    ScheduleStatus.CANCELLED: "cancel",
    ScheduleStatus.COMPLETED: "complete",
}


class InvalidTransition(ValueError):
    """A status change that the schedule's current status does not allow."""


class RunRefused(ValueError):
    """A manual run that cannot be queued (orphan or duplicate task)."""


def _transition(
    *, schedule: Schedule, to: str, now: datetime | None = None, by: str = "an operator"
) -> Schedule:
    with transaction.atomic():
        current = Schedule.objects.select_for_update().get(pk=schedule.pk)
        if to not in TRANSITIONS[current.status]:
            raise InvalidTransition(
                f"cannot {_VERBS[to]} schedule '{current.code}': it is {current.status}"
            )
        current.status = to
        fields = ["status", "updated_at"]
        if to == ScheduleStatus.ACTIVE:
            current.next_run_at = next_slot(current, after=now or timezone.now())
            fields.append("next_run_at")
        elif to in (ScheduleStatus.CANCELLED, ScheduleStatus.COMPLETED):
            current.next_run_at = None
            fields.append("next_run_at")
        current.save(update_fields=fields)
        # Resuming closes an auto-pause; stopping ends a late incident (docs/alerts.md).
        if to == ScheduleStatus.ACTIVE:
            alerts.schedule_resumed(schedule=current, by=by, now=now or timezone.now())
            current.pause_reason = ""
        else:
            alerts.schedule_stopped(schedule=current, why=f"{to} by {by}", now=timezone.now())
    if to == ScheduleStatus.ACTIVE:
        wake_schedulers()
    return current


def schedule_pause(*, schedule: Schedule, by: str = "an operator") -> Schedule:
    return _transition(schedule=schedule, to=ScheduleStatus.PAUSED, by=by)


def schedule_resume(
    *, schedule: Schedule, now: datetime | None = None, by: str = "an operator"
) -> Schedule:
    """Back to active; the next slot is computed from now, missed slots are not run.

    Resuming an auto-paused schedule closes its auto-paused incident."""
    return _transition(schedule=schedule, to=ScheduleStatus.ACTIVE, now=now, by=by)


def schedule_cancel(*, schedule: Schedule) -> Schedule:
    return _transition(schedule=schedule, to=ScheduleStatus.CANCELLED)


def schedule_complete(*, schedule: Schedule) -> Schedule:
    return _transition(schedule=schedule, to=ScheduleStatus.COMPLETED)


def next_slot(schedule: Schedule, *, after: datetime) -> datetime | None:
    """The schedule's first slot after `after`, or None if its trigger is exhausted/invalid."""
    try:
        return schedule.get_trigger().next_fire(after)
    except InvalidTrigger:
        return None


def display_zone(trigger: Trigger) -> str:
    """The zone a schedule shows times in when none is chosen: its cron's, else UTC."""
    return getattr(trigger, "tz", "UTC")


def normalize_trigger(spec: dict | str, *, code: str) -> Trigger:
    """Parse a spec; intervals without a seed (at any depth) are seeded with the code."""
    trigger = trigger_from_spec(spec)
    return trigger_from_spec(_seeded(trigger.to_spec(), code))


def _seeded(spec: dict, code: str) -> dict:
    if spec["kind"] == "interval" and not spec.get("seed"):
        return {**spec, "seed": code}
    if spec["kind"] == "compound":
        return {**spec, "children": [_seeded(child, code) for child in spec["children"]]}
    return spec


def schedule_create(
    *,
    code: str,
    task_name: str,
    trigger: dict | str,
    kwargs: dict | None = None,
    tz: str | None = None,
    source: str = ScheduleSource.OPERATOR,
    now: datetime | None = None,
    **options: object,
) -> Schedule:
    """Create an active schedule; raises InvalidTrigger for a bad trigger spec."""
    parsed = normalize_trigger(trigger, code=code)
    schedule = Schedule(
        code=code,
        task_name=task_name,
        kwargs=kwargs or {},
        trigger=parsed.to_spec(),
        tz=tz or display_zone(parsed),
        source=source,
        **options,
    )
    schedule.next_run_at = parsed.next_fire(now or timezone.now())
    schedule.full_clean()
    schedule.save()
    wake_schedulers()
    return schedule


def schedule_update(
    *, schedule: Schedule, trigger: dict | str, now: datetime | None = None, **fields: object
) -> Schedule:
    """Save an edited schedule; a changed trigger moves the next slot (from now)."""
    parsed = normalize_trigger(trigger, code=schedule.code)
    spec = parsed.to_spec()
    changed = spec != schedule.trigger
    for name, value in fields.items():
        setattr(schedule, name, value)
    schedule.tz = schedule.tz or display_zone(parsed)
    schedule.trigger = spec
    schedule.source = ScheduleSource.OPERATOR
    if changed and schedule.status == ScheduleStatus.ACTIVE:
        schedule.next_run_at = parsed.next_fire(now or timezone.now())
    schedule.full_clean()
    schedule.save()
    wake_schedulers()
    return schedule


def schedule_delete(*, schedule: Schedule) -> None:
    """Delete a schedule; its runs and incidents stay in the log (with code and task name)."""
    with transaction.atomic():
        alerts.schedule_deleted(schedule=schedule, now=timezone.now())
        schedule.delete()


def sync_code_defaults(*, tasks: Registry = registry, now: datetime | None = None) -> list[str]:
    """Create the missing record of every code default; an existing record always wins."""
    now = now or timezone.now()
    created = []
    runnable = tasks.runnable_names()
    candidates = [
        d for d in tasks.all() if d.default_trigger and not d.problems and d.name in runnable
    ]
    existing = set(
        Schedule.objects.filter(code__in=[d.name for d in candidates]).values_list(
            "code", flat=True
        )
    )
    for declaration in candidates:
        if declaration.name in existing:
            continue
        try:
            with transaction.atomic():
                _create_default(declaration, now)
            created.append(declaration.name)
        except IntegrityError:
            pass  # another scheduler created it first
    return created


def _create_default(declaration: TaskDeclaration, now: datetime) -> Schedule:
    trigger = declaration.default_trigger
    return Schedule.objects.create(
        code=declaration.name,
        task_name=declaration.name,
        trigger=trigger.to_spec(),
        tz=display_zone(trigger),
        source=ScheduleSource.CODE,
        next_run_at=trigger.next_fire(now),
        **asdict(declaration.options),
    )


def schedule_reset_to_default(*, schedule: Schedule, tasks: Registry = registry) -> Schedule:
    """Replace a record by its task's code default (deleting it has the same effect)."""
    declaration = tasks.get(schedule.task_name)
    if declaration is None or declaration.default_trigger is None or declaration.problems:
        raise RunRefused(f"task '{schedule.task_name}' declares no valid code default")
    with transaction.atomic():
        alerts.schedule_deleted(schedule=schedule, now=timezone.now())
        Schedule.objects.filter(pk=schedule.pk).delete()
        Schedule.objects.filter(code=declaration.name).delete()
        fresh = _create_default(declaration, timezone.now())
    wake_schedulers()
    return fresh


def schedule_run_now(
    *, schedule: Schedule, by: AbstractBaseUser | None = None, tasks: Registry = registry
) -> Run:
    """Queue a manual run and wake a scheduler; refused for orphans and duplicates."""
    refusal = tasks.refusal(schedule.task_name)
    if refusal:
        raise RunRefused(f"cannot run '{schedule.code}': {refusal}")
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.create(
            schedule=schedule,
            schedule_code=schedule.code,
            task_name=schedule.task_name,
            kwargs=schedule.kwargs,
            reason=RunReason.MANUAL,
            status=RunStatus.QUEUED,
            dispatch=schedule.dispatch,
            queued_at=now,
            not_before=now,
            requested_by=by if by is not None and by.is_authenticated else None,
        )
        dispatch.enqueue(run)
    wake_schedulers()
    return run
