"""Claiming work: due slots and queued runs, each won by exactly one process.

Claims are conditional UPDATEs whose row count says who won, so any number of
schedulers can share one database (SQLite or PostgreSQL): a slot moves
`next_run_at` from the value read to the next slot, a queued run moves from
`queued` to `running`. The unique (schedule, slot, attempt) constraint backs
them up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Case, Value, When

from .. import counters
from ..alerts import checks as alerts
from ..bulk import insert_rows, locked_or_skipped, update_each
from ..conf import setting
from ..models import Dispatch, Misfire, Run, RunReason, RunStatus, Schedule, ScheduleStatus
from ..registry import Registry
from ..timing import InvalidTrigger, Trigger
from ..validation import InvalidKwargs, kwargs_problem, printable, signature_problem
from . import chains, dispatch
from .outcomes import record_ended_elsewhere, record_on_schedules
from .records import new_run

logger = logging.getLogger(__name__)

MISSED_COUNT_CAP = 10_000
CATCH_UP_RECHECK = timedelta(seconds=1)


class WorkerSlots:
    """How many more runs this process may start in worker processes right now.

    Runs beyond it stay `queued` and start as workers free up: a hung run holds
    one worker, and never a slot it was not given.
    """

    def __init__(self, free: int | None, needs_worker: Callable[[str], bool]) -> None:
        self.free = free  # None: no limit (no worker pool)
        self.needs_worker = needs_worker

    def take(self, task_name: str) -> bool:
        if self.free is None or not self.needs_worker(task_name):
            return True
        if self.free <= 0:
            return False
        self.free -= 1
        return True

    def give_back(self, task_name: str) -> None:
        if self.free is not None and self.needs_worker(task_name):
            self.free += 1


UNLIMITED = WorkerSlots(None, lambda _name: False)


def in_flight_counts(
    schedule_ids: list[int], local_in_flight: dict[int, int], ended: Collection[int]
) -> dict[int, int]:
    """Runs of each schedule still executing, for `max_instances`: the running runs,
    less the ones whose body ended in this process and whose outcome is still being
    written (`ended`), plus this process's sync threads that outlived their timeout."""
    # Counted here, not by a GROUP BY: the runs in flight are few, and the plainer
    # statement costs less to build. `ended` is left out here too, not in SQL: in a
    # burst hundreds of outcomes wait to be written, and a NOT IN of them in every
    # claim cost more than the claim.
    running = Run.objects.running().filter(schedule_id__in=list(schedule_ids))
    counts: dict[int, int] = {}
    for schedule_id, pk in running.values_list("schedule_id", "pk"):
        if pk not in ended:
            counts[schedule_id] = counts.get(schedule_id, 0) + 1
    for schedule_id, count in local_in_flight.items():
        counts[schedule_id] = counts.get(schedule_id, 0) + count
    return counts


REPLACED = "replaced by a newer run"


def start_or_skip(
    run: Run,
    schedule: Schedule,
    *,
    now: datetime,
    instance_id: str,
    in_flight: int,
    ended: Collection[int] = (),
) -> list[int]:
    """Set the run running, or skipped when max_instances is reached.

    Returns ids of runs that `overlap="replace"` cancelled: the ones still
    executing (a run whose body ended here keeps its outcome, being written).
    """
    replaced: list[int] = []
    if in_flight >= schedule.max_instances:
        if schedule.overlap == "replace":
            # Unordered, so the running runs' partial index serves it (ordered, SQLite
            # read every kept run of the schedule through run_history_idx).
            running = Run.objects.running().filter(schedule=schedule).order_by()
            if ended:
                running = running.exclude(pk__in=list(ended))
            # A run another process has locked is being ended there (its outcome, an
            # operator's cancel): left to it, not waited for. An outcome writer locks
            # its runs before their schedules, and this claim holds the schedule's row:
            # waiting, each would wait for the other (PostgreSQL's row locks).
            ending = list(locked_or_skipped(running))
            replaced = [other.pk for other in ending]
            Run.objects.filter(pk__in=replaced).update(
                status=RunStatus.CANCELLED,
                finished_at=now,
                error=REPLACED,
                # One claimed ahead of its slot never began.
                started_at=Case(When(started_at__gt=now, then=Value(None)), default="started_at"),
            )
            # Those whose body ran count as runs of the schedule, as an operator's
            # cancel does (their scheduler's later report finds them ended).
            # (Not one started by this claim's own batch: replaced before it ran.)
            began = [other for other in ending if other.started_at and other.started_at < now]
            for other in began:
                other.status, other.finished_at, other.error = RunStatus.CANCELLED, now, REPLACED
            record_ended_elsewhere(began, now=now)
        else:
            run.status = RunStatus.SKIPPED
            run.finished_at = now
            run.error = (
                f"skipped: {in_flight} run(s) still in flight "
                f"(max_instances={schedule.max_instances})"
            )
            return replaced
    run.status = RunStatus.RUNNING
    run.started_at = now
    run.scheduler = instance_id
    return replaced


def _missed_slots(trigger: Trigger, first: datetime, now: datetime, keep: int):
    """(count, the last `keep` slots) of slots from `first` up to `now`: counted by the
    trigger (intervals and crons count, compounds walk up to the cap), so catch-up after
    a long downtime costs a pass little; the slots are the latest before now."""
    return trigger.slots_between(first, now, keep=keep, cap=MISSED_COUNT_CAP)


def claim_due(
    *,
    now: datetime,
    instance_id: str,
    tasks: Registry,
    limit: int,
    max_catch_up: int,
    local_in_flight: dict[int, int],
    slots: WorkerSlots = UNLIMITED,
    ended: Collection[int] = (),
    up_since: datetime | None = None,
    due_by: datetime | None = None,
) -> tuple[list[Run], list[int]]:
    """Claim every due slot this process wins. Returns (new runs, replaced run ids): the
    first run of each slot claimed, and the runs that ended at claim time.

    `due_by` (at least `now`): slots up to it count as due. The scheduler claims a
    little ahead so that a run starts at its slot rather than a transaction after it;
    the claim itself still happens once, whoever makes it.

    `up_since`: when this scheduler started; a misfire="skip" slot that fell due
    since then and is within its grace still runs (see `_skip`).

    A slot's run starts now if a worker is free for it, else it is recorded
    `queued` and starts when one is. One transaction for the batch; if the
    unique-slot safety net fires, the batch is retried slot by slot so that
    only the offending slot is dropped.
    """
    due = _due_first_current(max(now, due_by or now), tasks, limit, up_since)
    plans = []
    for schedule in due:
        slot = schedule.next_run_at
        # Whatever goes wrong planning one schedule parks that one; the rest go on.
        try:
            planned, next_at = _plan_schedule(
                schedule, slot, now, max_catch_up, tasks, up_since=up_since
            )
        except Exception as exc:  # noqa: BLE001 - any failure, not only InvalidTrigger
            _park_invalid(schedule, slot, _reason(exc))
            continue
        plans.append((schedule, slot, planned, next_at))
    if not plans:
        return [], []
    try:
        with transaction.atomic():
            return _claim_batch(plans, now, instance_id, (local_in_flight, ended), slots)
    except IntegrityError:
        runs: list[Run] = []
        replaced: list[int] = []
        for plan in plans:
            for run in plan[2]:
                run.pk = None
            try:
                with transaction.atomic():
                    won, gone = _claim_batch(
                        [plan], now, instance_id, (local_in_flight, ended), slots
                    )
            except IntegrityError:
                logger.warning("slot %s of %s already has a run; skipped", plan[1], plan[0].code)
                counters.count_claims(counters.CLAIM_CONFLICTS, [plan[0].code])
                continue
            runs += won
            replaced += gone
        return runs, replaced


def _due_first_current(
    due_by: datetime, tasks: Registry, limit: int, up_since: datetime | None
) -> list[Schedule]:
    """Up to `limit` due schedules: slots that fell due while this scheduler was up
    first, then older ones (a restart's backlog), each oldest first; the backlog
    keeps at least half the batch.

    After a long downtime every schedule is behind and catching them all up takes
    many passes; oldest first alone, a slot falling due meanwhile would wait behind
    the whole backlog. Current slots first alone would starve the backlog for good
    when the current ones fill every batch (a load beyond what the machine can
    run): its schedules would never run again. Both reads walk schedule_due_idx.
    """
    due = Schedule.objects.due(now=due_by, task_names=tasks.runnable_names())
    if up_since is None or limit < 2:
        return list(due[:limit])  # one a pass: oldest first, which starves none
    # Oldest first, the backlog's slots come before every current one. This one read
    # holds the whole batch when no more than a batch is due (most passes), or when its
    # backlog takes no more than half (the current slots after it fill the rest).
    oldest = list(due[: limit + 1])  # one more: a batch of exactly `limit` is not full
    older = [schedule for schedule in oldest[:limit] if schedule.next_run_at < up_since]
    if len(oldest) <= limit or len(older) <= limit // 2:
        return oldest[len(older) : limit] + older
    # The backlog fills more than half the read: the current slots get up to half.
    current = list(due.filter(next_run_at__gte=up_since)[: limit - limit // 2])
    older = older[: limit - min(len(current), limit // 2)]
    return current[: limit - len(older)] + older


def _claim_batch(plans, now, instance_id, local, slots: WorkerSlots):
    won, in_flight = _advance_won_slots(plans, now, local)
    if not won:
        return [], []
    replaced: list[int] = []
    created: list[Run] = []
    firsts: list[Run] = []
    # A slot claimed past its grace opens a late incident; one on time closes it.
    alerts.after_claims(claimed=[(schedule, slot) for schedule, _, slot in won], now=now)
    for schedule, planned, _ in won:
        # The first run starts now; further catch-up runs wait their turn in
        # the queue, so max_instances holds for them too.
        # The oldest run that may start (not a skip's record of the slots before it);
        # runs that end at claim time are reported too.
        first = next((run for run in planned if run.status != RunStatus.SKIPPED), planned[0])
        ended = [run for run in planned if run is not first and run.status == RunStatus.SKIPPED]
        if first.status == RunStatus.QUEUED and first.dispatch == Dispatch.INLINE:
            busy = in_flight.get(schedule.pk, 0)
            skips = busy >= schedule.max_instances and schedule.overlap != "replace"
            if not skips and not slots.take(schedule.task_name):
                created += planned  # queued: starts when a worker is free
                firsts += [first, *ended]
                continue
            replaced += start_or_skip(
                first, schedule, now=now, instance_id=instance_id, in_flight=busy, ended=local[1]
            )
            if first.status == RunStatus.RUNNING:
                in_flight[schedule.pk] = in_flight.get(schedule.pk, 0) + 1
                # A slot claimed ahead starts at its instant (engine.py), not at the claim.
                first.started_at = max(now, first.slot)
        created += planned
        firsts += [first, *ended]
    superseded = _supersede_catch_ups(firsts, now)
    firsts += superseded
    insert_rows(created)
    # One tally: the counters take one upsert per transaction, in key order (counters.py).
    counters.tally([*superseded, *(run for run in created if run.status == RunStatus.SKIPPED)])
    # A one-shot whose only slot passed its grace under misfire="skip" ran nothing and
    # has no slot left: it is done (one that runs completes after its last attempt).
    done = [s.pk for s, planned, _ in won if s.next_run_at is None and all(
        run.status == RunStatus.SKIPPED for run in planned)]  # fmt: skip
    if done:
        Schedule.objects.filter(
            pk__in=done, status=ScheduleStatus.ACTIVE, next_run_at__isnull=True
        ).update(status=ScheduleStatus.COMPLETED)
    for run in created:
        if run.status == RunStatus.QUEUED:
            dispatch.enqueue(run)
    failed = [run for run in created if run.status == RunStatus.FAILED]
    record_on_schedules(failed)
    chains.queue_follow_ups(failed, now=now)  # failed at claim time: a final failure
    return firsts, replaced


def _supersede_catch_ups(claimed: list[Run], now: datetime) -> list[Run]:
    """misfire="once": a catch-up run still queued when its schedule's next slot is
    claimed is skipped. The slot's run (on time, or a catch-up itself when that slot
    was late too) does the work it was owed, and "once" means one run, not a second
    one behind it (after a restart, workers are scarce). The new runs are not
    inserted yet: only older ones are found."""
    slots = {
        run.schedule_id: run
        for run in claimed
        if run.reason in (RunReason.SCHEDULED, RunReason.CATCH_UP)
        and run.status in (RunStatus.RUNNING, RunStatus.QUEUED)
        and run.schedule.misfire == Misfire.ONCE
    }
    if not slots:
        return []
    # A catch-up another process has locked (it is starting it) is left to that process.
    waiting = list(
        locked_or_skipped(
            Run.objects.queued().filter(schedule_id__in=list(slots), reason=RunReason.CATCH_UP)
        )
    )
    for run in waiting:
        instead = slots[run.schedule_id]
        run.schedule = instead.schedule  # as claimed: the loop reads it without a query
        run.status, run.finished_at = RunStatus.SKIPPED, now
        slot = f"{instead.slot:%Y-%m-%d %H:%M:%S} UTC"
        run.error = f"superseded: the slot of {slot} runs instead (misfire=once)"
    update_each(
        Run, ["status", "finished_at", "error"], [(r.status, now, r.error, r.pk) for r in waiting]
    )
    return waiting


def _advance_won_slots(
    plans, now: datetime, local
) -> tuple[list[tuple[Schedule, list[Run], datetime]], dict[int, int]]:
    """Move each schedule whose slot is still the planned one to its next slot.
    Returns those won, and the runs in flight of each.

    The rows are locked first (PostgreSQL: FOR UPDATE; SQLite: the write lock
    that its IMMEDIATE transactions take at BEGIN), so a schedule whose slot
    still reads as planned is this process's alone: another scheduler that
    read the same slot finds it moved once it gets the lock. The runs in flight
    are counted under the locks: an outcome written meanwhile (another process's,
    holding a schedule's row) counts as ended.
    """
    current = dict(
        Schedule.objects.select_for_update()
        .filter(pk__in=[schedule.pk for schedule, *_ in plans], status=ScheduleStatus.ACTIVE)
        .order_by("pk")  # every process locks in the same order: no deadlock between them
        .values_list("pk", "next_run_at")
    )
    in_flight = in_flight_counts(list(current), *local) if current else {}
    # A slot not yet due whose schedule is at max_instances is left to the pass at its
    # instant: claimed ahead, it would be skipped (or replace the run) because of a run
    # that may end before the slot comes. Not a claim lost either: none was tried.
    plans = [plan for plan in plans
             if plan[1] <= now or in_flight.get(plan[0].pk, 0) < plan[0].max_instances]  # fmt: skip
    won = [plan for plan in plans if plan[0].pk in current and current[plan[0].pk] == plan[1]]
    # Moved since it was read: another scheduler claimed it (or an operator's edit did).
    counters.count_claims(counters.CLAIMS_LOST, [plan[0].code for plan in plans
                          if plan[0].pk in current and current[plan[0].pk] != plan[1]])  # fmt: skip
    update_each(
        Schedule, ["next_run_at"], [(next_at, schedule.pk) for schedule, *_, next_at in won]
    )
    for schedule, _, _, next_at in won:
        schedule.next_run_at = next_at
    return [(schedule, planned, slot) for schedule, slot, planned, _ in won], in_flight


def _plan(
    schedule: Schedule,
    trigger: Trigger,
    slot: datetime,
    now: datetime,
    max_catch_up: int,
    up_since: datetime | None = None,
):
    """The runs a due slot makes, and the schedule's next slot."""
    lateness = (now - slot).total_seconds()
    if lateness <= schedule.misfire_grace:
        return [new_run(schedule, reason=RunReason.SCHEDULED, slot=slot, now=now)], (
            trigger.next_fire(slot)
        )
    # skip and once need only the latest slots: walking back max_catch_up slots for each
    # schedule was most of a restart's first pass after a long downtime.
    keep = max_catch_up if schedule.misfire == "all" else 2
    count, latest = _missed_slots(trigger, slot, now, keep)
    next_at = trigger.next_fire(now)
    if schedule.misfire == "skip":
        return _skip(schedule, count, latest, lateness, now, up_since), next_at
    if schedule.misfire == "once":
        return [new_run(schedule, reason=RunReason.CATCH_UP, slot=latest[-1], now=now)], next_at
    runs = [new_run(schedule, reason=RunReason.CATCH_UP, slot=s, now=now) for s in latest]
    if count > len(latest):
        logger.warning(
            "%s: %s; catching up the last %d",
            schedule.code,
            _missed_text(count, count >= MISSED_COUNT_CAP),
            len(latest),
        )
    return runs, next_at


def _missed_text(count: int, capped: bool) -> str:
    """How many slots were missed; past the count's cap, at least that many."""
    return f"{count}{'+' if capped else ''} slot(s) missed"


def _skip(
    schedule: Schedule,
    count: int,
    latest: list[datetime],
    lateness: float,
    now: datetime,
    up_since: datetime | None,
) -> list[Run]:
    """misfire="skip": one skipped run records the missed slots.

    The latest slot is no misfire if it fell due while this scheduler was up and is
    still within its grace: a restart reached its schedule late because it was
    catching up older ones. It runs as scheduled, and the skip records the slots
    before it. Slots that fell due while no scheduler was up stay skipped: running
    the latest of every frequent schedule at a restart is what `once` is for.
    """
    on_time = (
        up_since is not None
        and len(latest) > 1
        and latest[-1] >= up_since
        and (now - latest[-1]).total_seconds() <= schedule.misfire_grace
    )
    missed = count - 1 if on_time else count
    last_missed = latest[-2] if on_time else latest[-1]
    record = new_run(schedule, reason=RunReason.SCHEDULED, slot=last_missed, now=now)
    record.status = RunStatus.SKIPPED
    record.finished_at = now
    missed_text = _missed_text(missed, count >= MISSED_COUNT_CAP)
    record.error = f"{missed_text}, the first {lateness:.0f}s late (misfire=skip)"
    if not on_time:
        return [record]
    # In slot order, as every plan: the record lists below the run in histories.
    return [record, new_run(schedule, reason=RunReason.SCHEDULED, slot=latest[-1], now=now)]


def _plan_schedule(
    schedule: Schedule,
    slot: datetime,
    now: datetime,
    max_catch_up: int,
    tasks: Registry,
    *,
    up_since: datetime | None = None,
) -> tuple[list[Run], datetime | None]:
    """Plan one due schedule through the validation gate (trigger, kwargs).

    Kwargs that break the rules park the schedule (raised); kwargs that no
    longer fit the task's signature make the slot's run fail once, at claim
    time, without retries: calling the task could only raise TypeError.
    """
    problem = kwargs_problem(schedule.kwargs)
    if problem:
        raise InvalidKwargs(problem)
    trigger = schedule.get_trigger()
    planned, next_at = _plan(schedule, trigger, slot, now, max_catch_up, up_since)
    declaration = tasks.get(schedule.task_name)
    misfit = signature_problem(declaration.func, schedule.kwargs) if declaration else ""
    if misfit:
        # The run that would have run fails (not a skip's record of the missed slots).
        run = ([r for r in planned if r.status != RunStatus.SKIPPED] or planned)[-1]
        fail_unfit(run, misfit, now)
        _log_once(schedule.pk, "schedule %s: %s; its runs fail until fixed", schedule.code, misfit)
        planned = [run]
    return planned, next_at


def fail_unfit(run: Run, problem: str, now: datetime) -> None:
    run.status = RunStatus.FAILED
    run.started_at = run.finished_at = now
    run.error = f"not run: {problem} (the task's signature changed; fix the kwargs)"


# Schedules whose unfit kwargs were already logged by this process: logged once.
_LOGGED: set[int] = set()


def _log_once(schedule_id: int, message: str, *args: object) -> None:
    if schedule_id not in _LOGGED:
        _LOGGED.add(schedule_id)
        logger.error(message, *args)


def _reason(exc: BaseException) -> str:
    """An operator's reason for a planning failure: the gate's message, else the error."""
    if isinstance(exc, InvalidTrigger | InvalidKwargs):
        text = str(exc)
    else:
        try:
            text = f"{type(exc).__name__}: {exc}"
        except Exception:  # noqa: BLE001 - even str() of the error may fail
            text = type(exc).__name__
    text = printable(text)
    cap = setting("SILLO_ERROR_MAX_CHARS")
    return text if len(text) <= cap else text[: cap - 1] + "…"


def _park_invalid(schedule: Schedule, slot: datetime, message: str) -> None:
    """A schedule that cannot be planned stops being due until it is fixed and saved.

    Logged once: parked, it is no longer due, so no later pass meets it again.
    """
    logger.error("schedule %s parked as invalid: %s", schedule.code, message)
    Schedule.objects.filter(pk=schedule.pk, next_run_at=slot).update(
        next_run_at=None, invalid_reason=message, last_error=f"invalid: {message}"
    )


def unfit(run: Run, tasks: Registry) -> str:
    """Why a queued run's kwargs cannot reach its task, or ""."""
    problem = kwargs_problem(run.kwargs)
    if problem:
        return problem
    declaration = tasks.get(run.task_name)
    return signature_problem(declaration.func, run.kwargs) if declaration else ""


def unrunnable(run: Run, tasks: Registry) -> str:
    if run.schedule is None:
        return "skipped: the schedule was deleted"
    refusal = tasks.refusal(run.task_name)
    return f"skipped: {refusal}" if refusal else ""


def slots_due(*, by: datetime, tasks: Registry, limit: int) -> list[datetime]:
    """The slots due by `by`, earliest first, at most `limit` (schedule_due_idx): the
    loop looks for a crowd among them (lead.py)."""
    due = Schedule.objects.due(now=by, task_names=tasks.runnable_names())
    return list(due.values_list("next_run_at", flat=True)[:limit])


def next_times(
    *, tasks: Registry, include_queued: bool = True, held: Collection[int] = ()
) -> tuple[datetime | None, datetime | None]:
    """(the next slot, the time of the earliest queued run to start): two indexed
    lookups, from which the loop sleeps.

    Without `include_queued` the second is None: queued runs wait for a worker
    (a finished run wakes the loop), or the queue was not read this pass (engine.py
    keeps its earliest time). Runs this process holds (held.py) wait in its worker
    pool, not for a pass.
    """
    slot = Schedule.objects.next_slot_at(task_names=tasks.runnable_names())
    if not include_queued:
        return slot, None
    queued = Run.objects.queued().startable().filter(dispatch=Dispatch.INLINE)
    if held:
        queued = queued.exclude(pk__in=list(held))
    return slot, queued.order_by("not_before").values_list("not_before", flat=True).first()
