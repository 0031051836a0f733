"""Operations that change schedules and queue runs, as operators and code ask for them.

Views, the admin, the CLI and the scheduler's code-default sync call these.
The scheduler's own bookkeeping (claiming slots, recording outcomes, queuing
retries, completing a one-shot after its last run) lives in `scheduler/`.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from . import audit, chains, defaults
from .alerts import record as alerts
from .bulk import locked_or_skipped
from .inputs import kwargs_problem
from .models import (
    Dispatch,
    Run,
    RunReason,
    RunStatus,
    Schedule,
    ScheduleSource,
    ScheduleStatus,
)
from .registry import Registry, registry
from .scheduler import dispatch
from .scheduler.outcomes import lock_schedules_of, record_ended_elsewhere
from .timing import InvalidTrigger, Trigger, display_zone
from .validation import InvalidKwargs, check_kwargs, parse_trigger, signature_problem
from .wake import wake_schedulers

logger = logging.getLogger(__name__)

# verb -> (the statuses it applies to, the status it leads to); anything else is refused.
TRANSITIONS: dict[str, tuple[frozenset[str], str]] = {
    "pause": (frozenset({ScheduleStatus.ACTIVE}), ScheduleStatus.PAUSED),
    "resume": (frozenset({ScheduleStatus.PAUSED}), ScheduleStatus.ACTIVE),
    "cancel": (frozenset({ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED}), ScheduleStatus.CANCELLED),
    "complete": (frozenset({ScheduleStatus.ACTIVE}), ScheduleStatus.COMPLETED),
    "reactivate": (
        frozenset({ScheduleStatus.COMPLETED, ScheduleStatus.CANCELLED}),
        ScheduleStatus.ACTIVE,
    ),
}


def allowed_verbs(status: str) -> list[str]:
    """The transitions an operator may ask for in this status (buttons, CLI)."""
    return [
        verb
        for verb, (sources, _) in TRANSITIONS.items()
        if status in sources and verb != "complete"
    ]


class InvalidTransition(ValueError):
    """A status change that the schedule's current status does not allow."""


class RunRefused(ValueError):
    """A manual run that cannot be queued (orphan or duplicate task)."""


class CancelRefused(ValueError):
    """A run that cannot be cancelled (it already ended)."""


Actor = AbstractBaseUser | str | None  # a user, "cli:<os user>", or None (the code itself)


def _transition(
    *, schedule: Schedule, verb: str, by: Actor = None, via: str = "", now: datetime | None = None
) -> Schedule:
    sources, to = TRANSITIONS[verb]
    now = now or timezone.now()
    # The next slot is computed before the transaction: a search never runs while
    # the database's write lock is held (SQLite's would stall every scheduler).
    upcoming = None
    exhausted = False  # a trigger that parses and has no fire time left
    if to == ScheduleStatus.ACTIVE:
        fresh = Schedule.objects.filter(pk=schedule.pk).first() or schedule
        upcoming = next_slot(fresh, after=now)
        exhausted = upcoming is None and _parses(fresh)
    with transaction.atomic():
        current = Schedule.objects.select_for_update().get(pk=schedule.pk)
        if current.status not in sources:
            raise InvalidTransition(
                f"cannot {verb} schedule '{current.code}': it is {current.status}"
            )
        if verb == "reactivate" and upcoming is None:
            raise InvalidTransition(
                f"cannot reactivate schedule '{current.code}': its trigger has no fire time "
                "after now; edit the trigger first"
            )
        # A resumed one-shot whose time passed while it was paused is done.
        current.status = ScheduleStatus.COMPLETED if exhausted else to
        current.next_run_at = upcoming
        fields = ["status", "next_run_at", "updated_at"]
        if upcoming is not None and current.invalid_reason:
            current.invalid_reason = ""  # it plans again: no longer parked
            fields.append("invalid_reason")
        current.save(update_fields=fields)
        if to == ScheduleStatus.CANCELLED:
            Run.objects.queued().filter(schedule=current).update(
                status=RunStatus.CANCELLED,
                finished_at=now,
                error="dropped from the queue: the schedule was cancelled",
            )
        audit.record(verb, schedule=current, by=by, via=via)
        # Resuming closes an auto-pause; stopping ends a late incident (docs/alerts.md).
        who = audit.actor(by) or "the code"
        if current.status == ScheduleStatus.ACTIVE:
            alerts.schedule_resumed(schedule=current, by=who, now=now)
            current.pause_reason = ""
        else:
            alerts.schedule_stopped(schedule=current, why=f"{verb} by {who}", now=now)
    if current.status == ScheduleStatus.ACTIVE:
        wake_schedulers()
    return current


def schedule_pause(*, schedule: Schedule, by: Actor = None, via: str = "") -> Schedule:
    """Stop firing; queued retries and catch-ups wait until it is resumed."""
    return _transition(schedule=schedule, verb="pause", by=by, via=via)


def schedule_resume(
    *, schedule: Schedule, by: Actor = None, via: str = "", now: datetime | None = None
) -> Schedule:
    """Back to active; the next slot is computed from now, missed slots are not run.
    Resuming an auto-paused schedule closes its auto-paused incident."""
    return _transition(schedule=schedule, verb="resume", by=by, via=via, now=now)


def schedule_cancel(*, schedule: Schedule, by: Actor = None, via: str = "") -> Schedule:
    """Stop for good (until reactivated); its queued runs are dropped."""
    return _transition(schedule=schedule, verb="cancel", by=by, via=via)


def schedule_complete(*, schedule: Schedule) -> Schedule:
    return _transition(schedule=schedule, verb="complete")


def schedule_reactivate(
    *, schedule: Schedule, by: Actor = None, via: str = "", now: datetime | None = None
) -> Schedule:
    """A completed or cancelled schedule becomes active again, if its trigger has a future
    fire time (edit a past date first)."""
    return _transition(schedule=schedule, verb="reactivate", by=by, via=via, now=now)


def _parses(schedule: Schedule) -> bool:
    try:
        schedule.get_trigger()
    except Exception:  # noqa: BLE001  a parked record may fail in any way; it is not "done"
        return False
    return True


def next_slot(schedule: Schedule, *, after: datetime) -> datetime | None:
    """The schedule's first slot after `after`, or None if its trigger is exhausted/invalid."""
    try:
        return schedule.get_trigger().next_fire(after)
    except (InvalidTrigger, OverflowError, ValueError):
        return None


def validate(schedule: Schedule) -> None:
    """ValidationError naming each field a schedule record may not hold.

    Django validates a check constraint with a query that annotates every field
    (4 ms each, 90% of a create); the fields' own rules say what the constraints
    say (tests/scheduler/test_services.py holds one to each), and the database
    still enforces them.
    """
    schedule.full_clean(validate_constraints=False)


def normalize_trigger(spec: dict | str, *, code: str) -> Trigger:
    """Parse a spec through the validation gate; intervals without a seed (at any depth)
    are seeded with the code."""
    trigger = parse_trigger(spec)
    return parse_trigger(_seeded(trigger.to_spec(), code))


def checked_kwargs(kwargs: object, task_name: str, tasks: Registry = registry) -> dict:
    """Kwargs that follow the rules and fit the task's signature; InvalidKwargs otherwise."""
    value = check_kwargs({} if kwargs is None else kwargs)
    declaration = tasks.get(task_name)
    if declaration is not None:
        problem = signature_problem(declaration.func, value)
        if problem:
            raise InvalidKwargs(f"{problem} (does not fit {task_name})")
    return value


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
    tasks: Registry = registry,
    by: Actor = None,
    via: str = "",
    **options: object,
) -> Schedule:
    """Create an active schedule; raises InvalidTrigger for a bad trigger spec and
    InvalidKwargs for kwargs that break the rules or do not fit the task.

    Options not given are the task's declared ones (`@schedules.task(timeout=...)`).
    """
    parsed = normalize_trigger(trigger, code=code)
    declaration = tasks.get(task_name)
    declared = asdict(declaration.options) if declaration is not None else {}
    values = {**declared, **options}
    # Follow-ups: known codes, no cycle, the depth limit, result_as fits (InvalidChain).
    values.update(
        chains.check_chain(
            code=code,
            then=values.get("then"),
            catch=values.get("catch"),
            result_as=values.get("result_as", ""),
            tasks=tasks,
        )
    )
    schedule = Schedule(
        code=code,
        task_name=task_name,
        kwargs=checked_kwargs(kwargs, task_name),
        trigger=parsed.to_spec(),
        tz=tz or display_zone(parsed),
        source=source,
        **values,
    )
    schedule.next_run_at = _future_fire(parsed, now or timezone.now())
    validate(schedule)
    with transaction.atomic():
        schedule.save()
        audit.record("create", schedule=schedule, by=by, via=via)
    wake_schedulers()
    return schedule


class EditConflict(ValueError):
    """The schedule changed since the operator loaded it; `differences` says how."""

    def __init__(self, message: str, differences: dict[str, tuple]) -> None:
        super().__init__(message)
        self.differences = differences


def schedule_update(
    *,
    schedule: Schedule,
    trigger: dict | str,
    now: datetime | None = None,
    expected_version: int | None = None,
    by: Actor = None,
    via: str = "",
    **fields: object,
) -> Schedule:
    """Save an operator's edit: only the fields that changed, and only onto the version
    the operator saw (`expected_version`), so a slot claimed meanwhile is never rewound.

    A changed trigger moves the next slot (from now); so does saving a schedule the
    scheduler parked as invalid, which loses its flag. Raises EditConflict when the
    record changed since that version, naming the fields that now differ.
    """
    parsed = normalize_trigger(trigger, code=schedule.code)
    spec = parsed.to_spec()
    now = now or timezone.now()
    if "kwargs" in fields:
        task_name = str(fields.get("task_name") or schedule.task_name)
        fields["kwargs"] = checked_kwargs(fields["kwargs"], task_name)
    if "tz" in fields and not fields["tz"]:
        fields["tz"] = display_zone(parsed)  # left empty: the trigger's own zone
    if chains.given(fields):
        # Follow-ups: known codes, no cycle, the depth limit, result_as fits (InvalidChain).
        fields.update(
            chains.check_chain(
                code=schedule.code,
                then=fields.get("then", schedule.then),
                catch=fields.get("catch", schedule.catch),
                result_as=fields.get("result_as", schedule.result_as),
                kept=chains.kept_by(schedule),
            )
        )
    # Computed before the row is locked: a costly trigger never holds the write lock.
    upcoming = _future_fire(parsed, now)
    with transaction.atomic():
        current = Schedule.objects.select_for_update().get(pk=schedule.pk)
        wanted = {**fields, "trigger": spec}
        changes = {name: v for name, v in wanted.items() if getattr(current, name) != v}
        if expected_version is not None and current.version != expected_version:
            raise EditConflict(
                f"'{current.code}' was changed by someone else since you opened it "
                f"(version {expected_version}, now {current.version}); review and save again",
                {name: (getattr(current, name), value) for name, value in changes.items()},
            )
        parked = bool(current.invalid_reason)
        if not changes and not parked:
            return current
        if "trigger" in changes or parked:
            changes["tz"] = fields.get("tz") or current.tz or display_zone(parsed)
            if current.status == ScheduleStatus.ACTIVE:
                changes["next_run_at"] = upcoming
            changes["invalid_reason"] = ""
        before = {name: getattr(current, name) for name in changes}
        for name, value in changes.items():
            setattr(current, name, value)
        current.source = ScheduleSource.OPERATOR
        validate(current)
        current.version += 1
        update = [*changes, "source", "version", "updated_at"]
        current.save(update_fields=update)
        diff = {
            name: [_plain(before[name]), _plain(value)]
            for name, value in changes.items()
            if name not in ("next_run_at", "invalid_reason")
        }
        audit.record("edit", schedule=current, by=by, via=via, changes=diff)
    wake_schedulers()
    return current


def _future_fire(trigger: Trigger, now: datetime) -> datetime:
    """The trigger's next fire time, in UTC as the record reads back (a cron gives it in
    its zone: the create's answer said +01:00 where every later read says Z); a
    trigger with none (a past date, an "all" whose children only met in the past) is
    refused, never saved to sit idle."""
    upcoming = trigger.next_fire(now)
    if upcoming is None:
        raise InvalidTrigger(
            "trigger: it has no fire time after now (a date in the past?); a schedule needs one"
        )
    return upcoming.astimezone(UTC)


def _plain(value: object) -> object:
    """A value as the audit's JSON keeps it."""
    return value.isoformat() if isinstance(value, datetime) else value


def schedule_delete(*, schedule: Schedule, by: Actor = None, via: str = "") -> None:
    """Delete a schedule; its runs, audit events and incidents stay (with its code)."""
    with transaction.atomic():
        alerts.schedule_deleted(schedule=schedule, now=timezone.now())
        audit.record(
            "delete", schedule=None, code=schedule.code, by=by, via=via, gone_id=schedule.pk
        )
        schedule.delete()


def sync_code_defaults(*, tasks: Registry = registry, now: datetime | None = None) -> list[str]:
    """Create missing code-default records and update the ones no operator changed."""
    return defaults.sync_code_defaults(tasks=tasks, now=now)


def schedule_reset_to_default(
    *, schedule: Schedule, tasks: Registry = registry, by: Actor = None, via: str = ""
) -> Schedule:
    """Put the code's trigger and options back on a task's code-default record."""
    try:
        reset = defaults.reset_to_default(schedule=schedule, tasks=tasks)
    except defaults.NoCodeDefault as exc:
        raise RunRefused(str(exc)) from None
    audit.record("reset", schedule=reset, by=by, via=via)
    return reset


def schedule_run_now(
    *,
    schedule: Schedule,
    by: Actor = None,
    via: str = "",
    kwargs: dict | None = None,
    merge: bool = True,
    rerun_of: Run | None = None,
    tasks: Registry = registry,
    follow_ups: bool = True,
    reserve: float = 0.0,
) -> Run:
    """Queue a manual run and wake a scheduler; refused for orphans and duplicates.

    `kwargs`, if given, are merged over the schedule's own for this run only
    (`merge=False`: they replace them, as the dashboard's run-with form and a
    rerun do); the result must fit the task's signature (InvalidKwargs
    otherwise). `rerun_of` links the new run to the past run it repeats. A
    manual run triggers the schedule's follow-ups like a scheduled one;
    `follow_ups=False` runs this one only (docs/chains.md). `reserve`: seconds the
    schedulers leave the run to the caller, which starts it itself (the CLI's
    `run --inline`); should the caller die first, a scheduler starts it after them.
    A run handed to a worker pool (`dispatch="enqueue"`) is its worker's: not reserved.
    """
    if schedule.dispatch != Dispatch.INLINE:
        reserve = 0.0
    refusal = tasks.refusal(schedule.task_name)
    if refusal:
        raise RunRefused(f"cannot run '{schedule.code}': {refusal}")
    run_kwargs = schedule.kwargs
    if kwargs is not None:
        merged = isinstance(kwargs, dict) and merge
        run_kwargs = {**schedule.kwargs, **kwargs} if merged else kwargs
        problem = kwargs_problem(schedule.task_name, run_kwargs, tasks=tasks)
        if problem:
            raise InvalidKwargs(f"kwargs: {problem}")
    other = run_kwargs != schedule.kwargs
    detail = " with other kwargs" if other else ""
    if rerun_of is not None:
        detail += f", a rerun of run #{rerun_of.pk}"
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.create(
            schedule=schedule,
            schedule_code=schedule.code,
            task_name=schedule.task_name,
            kwargs=run_kwargs,
            reason=RunReason.MANUAL,
            status=RunStatus.QUEUED,
            dispatch=schedule.dispatch,
            queued_at=now,
            not_before=now + timedelta(seconds=reserve),
            requested_by=by if isinstance(by, AbstractBaseUser) and by.is_authenticated else None,
            parent=rerun_of,
            follow_ups=follow_ups,
        )
        dispatch.enqueue(run)
        if not follow_ups:
            detail += " (this one only)"
        audit.record(
            "rerun" if rerun_of is not None else "run_now", schedule=schedule, by=by, via=via,
            detail=f"run #{run.pk}{detail}",
            changes={"kwargs": [schedule.kwargs, run_kwargs]} if other else None,
        )  # fmt: skip
    if not reserve:
        wake_schedulers()
    return run


def run_rerun(
    *, run: Run, by: Actor = None, via: str = "", kwargs: dict | None = None,
    tasks: Registry = registry,
) -> Run:  # fmt: skip
    """Queue a manual run of a past run's schedule with that run's kwargs (or `kwargs`).

    Refused, with the reason, when the schedule was deleted or its task cannot run.
    """
    schedule = Schedule.objects.filter(pk=run.schedule_id).first() if run.schedule_id else None
    if schedule is None:
        raise RunRefused(
            f"cannot rerun run #{run.pk}: its schedule '{run.schedule_code}' was deleted"
        )
    return schedule_run_now(
        schedule=schedule, by=by, via=via, kwargs=run.kwargs if kwargs is None else kwargs,
        merge=False, rerun_of=run, tasks=tasks,
    )  # fmt: skip


def run_cancel(*, run: Run, by: Actor, via: str = "") -> Run:
    """Stop a queued or running run; refused for a run that already ended.

    A queued run is cancelled at once. A running one is recorded cancelled
    now, and the scheduler that owns it stops it for real (terminates its
    worker process) when it notices, within about a second.
    """
    who = audit.actor(by)
    with transaction.atomic():
        # The schedule before the run, as claims and recovery take them (the run adds to
        # the schedule's tally). A run another process has locked is having its outcome
        # written there: refused, not waited for, as that writer took the run first and
        # waits for the schedule.
        lock_schedules_of([run])
        current = locked_or_skipped(Run.objects.filter(pk=run.pk)).first()
        if current is None:
            if Run.objects.filter(pk=run.pk).exists():
                raise CancelRefused(f"run #{run.pk} is ending now; its outcome is being written")
            raise CancelRefused(f"run #{run.pk} no longer exists")
        if current.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            raise CancelRefused(f"run #{current.pk} already ended ({current.status})")
        current.status = RunStatus.CANCELLED
        current.finished_at = timezone.now()
        if current.started_at and current.started_at > current.finished_at:
            current.started_at = None  # claimed ahead of its slot: it never began
        current.error = f"cancelled by {who or 'an operator'}"
        current.cancelled_by = who
        current.save(update_fields=["status", "started_at", "finished_at", "error", "cancelled_by"])
        if current.started_at is not None:  # its body ran: it counts
            record_ended_elsewhere([current], now=current.finished_at)
        schedule = Schedule.objects.filter(pk=current.schedule_id).first()
        audit.record(
            "cancel_run", schedule=schedule, code=current.schedule_code, by=by, via=via,
            detail=f"run #{current.pk}",
        )  # fmt: skip
    wake_schedulers()
    return current


def schedule_drop_queued(*, schedule: Schedule, by: Actor, via: str = "") -> int:
    """Cancel every queued run of a schedule (retries, catch-ups, manual runs); how many."""
    who = audit.actor(by)
    with transaction.atomic():
        dropped = (
            Run.objects.queued()
            .filter(schedule=schedule)
            .update(
                status=RunStatus.CANCELLED,
                finished_at=timezone.now(),
                error=f"dropped from the queue by {who or 'an operator'}",
                cancelled_by=who,
            )
        )
        audit.record("drop_queued", schedule=schedule, by=by, via=via, detail=f"{dropped} run(s)")
    return dropped
