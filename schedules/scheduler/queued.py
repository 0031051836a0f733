"""Claiming queued runs: manual runs, retries, catch-ups, and slots that waited for a worker.

A queued run moves from `queued` to `running` in the transaction that claims it,
so exactly one process starts it (see claims.py for due slots).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from django.db import transaction

from .. import counters
from ..bulk import locked_or_skipped
from ..models import Dispatch, Run, RunReason, RunStatus, Schedule
from ..registry import Registry
from . import chains, claims, dispatch
from .outcomes import record_on_schedules


def claim_queued(
    *,
    now: datetime,
    instance_id: str,
    tasks: Registry,
    limit: int,
    local_in_flight: dict[int, int],
    only: int | None = None,
    dispatch_kind: str = Dispatch.INLINE,
    slots: claims.WorkerSlots = claims.UNLIMITED,
    held: Collection[int] = (),
    ended: Collection[int] = (),
    reserved: bool = False,
) -> tuple[list[Run], list[int]]:
    """Claim queued runs (manual runs, retries) whose time has come, as workers allow.

    Schedulers claim the runs they execute themselves (`inline`); a worker
    claims the `enqueue` run its task names. One transaction for the batch, so a
    burst left queued for want of workers drains at the pool's pace, not at one
    transaction a run. Runs this process holds (`held`) are left to it.
    `reserved`: run `only` was queued for this process to start (its `not_before`
    keeps the others off, services.schedule_run_now), so its time has come here.
    """
    queued = Run.objects.queued().startable().filter(dispatch=dispatch_kind)
    if not (reserved and only is not None):
        queued = queued.filter(not_before__lte=now)
    if only is not None:
        queued = queued.filter(pk=only)
    if held:
        queued = queued.exclude(pk__in=list(held))
    # By the schedule's priority first: a critical retry jumps the queue.
    ordered = queued.in_start_order()
    chosen = {
        run_id: task_name
        for run_id, task_name in ordered.values_list("pk", "task_name")[:limit]
        if slots.take(task_name)  # the others stay queued until a worker is free
    }
    if not chosen:
        return [], []
    local = (local_in_flight, ended)
    return _claim_chosen(chosen, {}, now, instance_id, tasks, local, slots)


def to_hold(
    *, now: datetime, task_names: Collection[str], held: Collection[int], limit: int
) -> list[Run]:
    """Queued runs waiting for a worker that this process may hold, in start order:
    read with their schedule, not claimed (held.py starts them)."""
    if limit <= 0 or not task_names:
        return []
    rows = (
        Run.objects.queued()
        .startable()
        .filter(
            not_before__lte=now,
            dispatch=Dispatch.INLINE,
            task_name__in=list(task_names),
            schedule__isnull=False,
        )
        .select_related("schedule")
    )
    if held:
        rows = rows.exclude(pk__in=list(held))
    return list(rows.in_start_order()[:limit])


def start_held(
    *,
    runs: list[Run],
    now: datetime,
    instance_id: str,
    tasks: Registry,
    local_in_flight: dict[int, int],
    ended: Collection[int] = (),
) -> tuple[list[Run], list[int]]:
    """Claim queued runs that this process holds, as claimed (with their schedule):
    each has a worker waiting for it. They are checked, not read again (only a
    schedule edited since is); one that another process started, or an operator
    cancelled, is left out.

    Returns (the runs claimed: running, or ended at claim time; replaced run ids).
    """
    chosen = {run.pk: run.task_name for run in runs}
    known = {run.pk: run for run in runs}
    local = (local_in_flight, ended)
    return _claim_chosen(chosen, known, now, instance_id, tasks, local, claims.UNLIMITED)


def _claim_chosen(chosen, known, now, instance_id, tasks, local, slots):
    with transaction.atomic():
        mine = list(_lock_queued(chosen, known))
        for run_id in chosen.keys() - {run.pk for run in mine}:
            slots.give_back(chosen[run_id])  # another process claimed it first
        batch = _QueuedBatch(mine, now=now, instance_id=instance_id, local=local)
        for run in mine:
            batch.claim(run, tasks)
            if run.status != RunStatus.RUNNING:
                slots.give_back(run.task_name)
        batch.flush()
    for run in batch.claimed:
        if run.pk in batch.lost:
            slots.give_back(run.task_name)
    return [run for run in batch.claimed if run.pk not in batch.lost], batch.replaced


def _lock_queued(chosen: dict[int, str], known: dict[int, Run]):
    """The chosen runs still queued, locked for this transaction (PostgreSQL: rows
    another scheduler holds are skipped; SQLite: its IMMEDIATE transaction holds
    the write lock from BEGIN), in the order they were chosen.

    Runs this process holds (`known`, as claimed with their schedule) are only
    checked, not read again: a burst waiting for workers is read once, and only
    the schedules edited since (their `updated_at` moved) are read afresh, so an
    edit made while a run was held applies to it.
    """
    by_id: dict[int, Run] = {}
    mentioned = [run_id for run_id in chosen if run_id in known]
    unknown = [run_id for run_id in chosen if run_id not in known]
    if mentioned:
        # Still queued, its schedule still there and not paused (`startable`).
        still = Run.objects.queued().startable().filter(pk__in=mentioned, schedule__isnull=False)
        edited_at = dict(locked_or_skipped(still).values_list("pk", "schedule__updated_at"))
        stale = {known[pk].schedule_id for pk, at in edited_at.items()
                 if known[pk].schedule.updated_at != at}  # fmt: skip
        fresh = Schedule.objects.in_bulk(stale) if stale else {}
        for pk in edited_at:
            run = known[pk]
            run.schedule = fresh.get(run.schedule_id, run.schedule)
            by_id[pk] = run
    if unknown:
        rows = Run.objects.select_related("schedule").filter(
            pk__in=unknown, status=RunStatus.QUEUED
        )
        by_id.update((run.pk, run) for run in locked_or_skipped(rows))
    return (by_id[run_id] for run_id in chosen if run_id in by_id)


class _QueuedBatch:
    """Queued runs being claimed in one transaction: the common case (the run
    starts) is written in one UPDATE; skips, misfits and waits one by one."""

    def __init__(self, runs: list[Run], *, now: datetime, instance_id: str, local: tuple) -> None:
        self.now, self.instance_id, self.local, self.ended = now, instance_id, *local
        schedule_ids = [run.schedule_id for run in runs if run.schedule_id is not None]
        self.in_flight = claims.in_flight_counts(schedule_ids, *local)
        self.starting: list[int] = []
        self.lost: set[int] = set()
        self.claimed: list[Run] = []
        self.replaced: list[int] = []

    def claim(self, run: Run, tasks: Registry) -> None:
        now = self.now
        problem = claims.unrunnable(run, tasks)
        misfit = "" if problem else claims.unfit(run, tasks)
        if problem:
            run.status, run.finished_at, run.error = RunStatus.SKIPPED, now, problem
            run.save(update_fields=["status", "finished_at", "error"])
            counters.tally([run])
        elif misfit:
            claims.fail_unfit(run, misfit, now)
            run.save(update_fields=["status", "started_at", "finished_at", "error"])
            record_on_schedules([run])
            chains.queue_follow_ups([run], now=now)  # failed at claim time: a final failure
        else:
            schedule = run.schedule
            busy = self.in_flight.get(schedule.pk, 0)
            waits = run.reason in (RunReason.CATCH_UP, RunReason.CHAINED)
            if waits and busy >= schedule.max_instances:
                # A catch-up or a follow-up waits for a free instance instead of
                # being skipped: it is owed work, not a slot that came too soon.
                run.not_before = now + claims.CATCH_UP_RECHECK
                run.save(update_fields=["not_before"])
                dispatch.enqueue(run, run_after=run.not_before)
                return
            if busy >= schedule.max_instances and schedule.overlap == "replace":
                self.flush()  # runs started in this batch are replaced too
            replaced = claims.start_or_skip(
                run, schedule, now=now, instance_id=self.instance_id, in_flight=busy,
                ended=self.ended,
            )  # fmt: skip
            if replaced:
                self.replaced += replaced
                busy = self.local.get(schedule.pk, 0)
                for earlier in self.claimed:  # started in this batch: replaced before it ran
                    if earlier.pk in replaced:
                        earlier.status, earlier.finished_at = RunStatus.CANCELLED, now
                        earlier.error = claims.REPLACED
            if run.status == RunStatus.RUNNING:
                self.starting.append(run.pk)
                self.in_flight[schedule.pk] = busy + 1
            else:
                run.save(update_fields=["status", "finished_at", "error"])
                counters.tally([run])
        self.claimed.append(run)

    def flush(self) -> None:
        if not self.starting:
            return
        won = Run.objects.filter(pk__in=self.starting, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING, scheduler=self.instance_id, started_at=self.now
        )
        if won != len(self.starting):
            # A database without a write lock at BEGIN (a host's SQLite settings) let
            # another scheduler take some first: only the rows it did not take are ours.
            ours = Run.objects.filter(pk__in=self.starting, scheduler=self.instance_id)
            self.lost |= set(self.starting) - set(ours.values_list("pk", flat=True))
        self.starting = []
