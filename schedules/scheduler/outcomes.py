"""Recording outcomes: finished runs, their retries, and each schedule's last outcome."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection, transaction

from .. import run_tallies
from ..alerts import record as alerts
from ..alerts.selectors import probes_among
from ..bulk import update_each
from ..caps import cap_error, cap_traceback
from ..choices import ERROR_OUTCOMES
from ..models import Run, RunOutput, RunReason, RunStatus, Schedule, ScheduleStatus
from . import chains, dispatch
from .records import new_run


def still_running(run_ids: list[int]) -> set[int]:
    """Of these runs, the ones no other process has cancelled or interrupted."""
    if not run_ids:
        return set()
    return set(Run.objects.running().filter(pk__in=run_ids).values_list("pk", flat=True))


def finish_runs(*, items: list[tuple[Run, dict]], now: datetime) -> list[tuple]:
    """Record the outcomes of finished runs in one transaction.

    `items` pairs each Run (as claimed, with its schedule) with its outcome
    (status, error, traceback, result, retry_in). For each, returns (the run,
    its queued retry, its follow-ups), or (None, None, []) if another process
    already ended the run (replaced, or interrupted because its scheduler
    looked dead). A one-shot whose trigger has no slot left is completed after
    its last attempt. A final outcome queues its follow-ups (then / catch) in
    this same transaction, so they are never lost nor doubled (chains.py).
    """
    results: list[tuple] = []
    retries: list[Run] = []
    completing: list[int] = []
    retried: set[int] = set()
    with transaction.atomic():
        # Runs another process ended meanwhile (replaced, interrupted) keep that ending.
        ours = set(
            Run.objects.select_for_update()
            .filter(pk__in=[run.pk for run, _ in items], status=RunStatus.RUNNING)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        finished = []
        deferred = []
        probes = _probes_to_retry(items, ours)
        for run, outcome in items:
            if run.pk not in ours:
                results.append((None, None, []))
                continue
            # Waits count from the body's end, however late its outcome is written.
            ended = outcome.get("ended_at") or now
            if outcome["status"] == RunStatus.QUEUED:  # deferred: back in the queue
                run.status, run.started_at, run.scheduler = RunStatus.QUEUED, None, ""
                run.not_before = ended + timedelta(seconds=outcome["retry_in"] or 0)
                run.error = cap_error(outcome["error"])
                deferred.append(run)
                results.append((run, None, []))
                continue
            run.status, run.finished_at = outcome["status"], ended
            run.error, run.traceback, run.result = (
                cap_error(outcome["error"]),
                cap_traceback(outcome["traceback"]),
                outcome["result"],
            )
            finished.append(run)
            retry = None
            schedule = run.schedule
            # A half-open probe is one attempt: its retry would wait out the pause, and
            # the next probe after the cool-down tries again anyway (docs/alerts.md).
            retries_left = outcome["retry_in"] is not None and run.pk not in probes
            if retries_left and schedule is not None:
                retry = new_run(schedule, reason=RunReason.RETRY, slot=run.slot, now=now)
                retry.attempt = run.attempt + 1
                retry.kwargs = run.kwargs
                retry.not_before = ended + timedelta(seconds=outcome["retry_in"])
                retry.requested_by_id = run.requested_by_id
                retry.parent_id = run.pk
                retry.dispatch = run.dispatch
                retry.depth, retry.follow_ups = run.depth, run.follow_ups
                retries.append(retry)
                retried.add(run.pk)
            elif schedule is not None and _kind(schedule.trigger) not in ("interval", "cron"):
                completing.append(schedule.pk)
            results.append((run, retry, []))
        waiting = ["status", "started_at", "scheduler", "not_before", "error"]
        update_each(Run, waiting, [(*(getattr(r, f) for f in waiting), r.pk) for r in deferred])
        # started_at too: a run claimed ahead began at its slot, or never (engine.py).
        fields = ["status", "started_at", "finished_at", "error", "traceback", "result"]
        # The schedules' rows first (a claim's order: lock_schedules_of), then the runs,
        # which add to the schedules' tallies, by tally.
        record_on_schedules(finished)
        by_tally = sorted(finished, key=tally_order)
        update_each(Run, fields, [(*(getattr(r, f) for f in fields), r.pk) for r in by_tally])
        # Incidents, their notifications (the outbox), counters and outcome logs.
        alerts.after_outcomes(runs=finished, retried=retried, now=now)
        if completing:
            # A one-shot with no slot left is done after its last attempt.
            Schedule.objects.filter(
                pk__in=completing, status=ScheduleStatus.ACTIVE, next_run_at__isnull=True
            ).update(status=ScheduleStatus.COMPLETED)
        Run.objects.bulk_create(retries)
        for retry in retries:
            dispatch.enqueue(retry, run_after=retry.not_before)
        for run in deferred:  # a worker-pool run goes back to its pool, for later
            dispatch.enqueue(run, run_after=run.not_before)
        # Output is kept for every run whose body ran, ended here or elsewhere (an
        # operator's cancel ends the run in the database before its worker stops).
        _keep_output(
            [(run.pk, outcome.get("output")) for run, outcome in items
             if outcome["status"] != RunStatus.QUEUED],
            now=now,
        )  # fmt: skip
        # After the final outcome only: a run that is retried has not finished its work.
        follow_ups = chains.queue_follow_ups(
            [run for run in finished if run.pk not in retried], now=now
        )
    by_parent: dict[int, list[Run]] = {}
    for follow in follow_ups:
        by_parent.setdefault(follow.parent_id, []).append(follow)
    return [
        (run, retry, by_parent.get(run.pk, []) if run is not None else [])
        for run, retry, _ in results
    ]


def record_ended_elsewhere(runs: list[Run], *, now: datetime) -> None:
    """Runs whose body ran, ended outside the outcome writer (an operator's cancel):
    counted on their schedules (runs, last outcome), in the counters and incidents, as
    the outcome their scheduler would have written, which now finds them ended and
    records nothing more. In the caller's transaction, the schedules locked first."""
    record_on_schedules(runs)
    alerts.after_outcomes(runs=runs, retried=set(), now=now)


def save_output(*, run_id: int, text: str, total: int, cut: int, now: datetime) -> None:
    """The output of a running run so far (its page and crash recovery read it)."""
    if Run.objects.filter(pk=run_id).exists():
        _upsert([RunOutput(run_id=run_id, text=text, total=total, cut=cut, updated_at=now)])


def _keep_output(items: list[tuple[int, object]], *, now: datetime) -> None:
    written = {pk: buffer for pk, buffer in items if buffer is not None and buffer.total}
    if not written:
        return
    existing = Run.objects.filter(pk__in=list(written)).values_list("pk", flat=True)
    rows = []
    for pk in sorted(existing):
        text, total, cut = written[pk].snapshot()
        rows.append(RunOutput(run_id=pk, text=text, total=total, cut=cut, updated_at=now))
    _upsert(rows)


def _upsert(rows: list[RunOutput]) -> None:
    RunOutput.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["run"],
        update_fields=["text", "total", "cut", "updated_at"],
    )


def _probes_to_retry(items: list[tuple[Run, dict]], ours: set[int]) -> set[int]:
    """The half-open probes among runs that would be retried: manual runs of paused
    schedules (rare: nothing is read for the rest)."""
    candidates = [
        run.pk
        for run, outcome in items
        if run.pk in ours
        and outcome["retry_in"] is not None
        and run.reason == RunReason.MANUAL
        and run.schedule is not None
        and run.schedule.status == ScheduleStatus.PAUSED
    ]
    return probes_among(candidates)


def _kind(spec: object) -> object:
    # A corrupt stored spec (a list, a string) must not break recording a manual run.
    return spec.get("kind") if isinstance(spec, dict) else None


def lock_schedules_of(runs: list[Run]) -> None:
    """Lock the schedules of runs about to finish, in primary key order.

    A finished run adds to its schedule's tally (run_tallies.py) and a claim locks the
    schedule's row before its skipped runs do: ending runs, a process takes the schedule
    first as well, so the two never wait on each other in opposite orders. (The outcome
    writer needs no query for it: its update of the schedules' counters locks them.)
    """
    ids = sorted({run.schedule_id for run in runs if run.schedule_id is not None})
    if ids and connection.features.has_select_for_update:  # SQLite: one writer at a time
        locked = Schedule.objects.select_for_update().filter(pk__in=ids).order_by("pk")
        list(locked.values_list("pk", flat=True))


def tally_order(run: Run) -> tuple:
    """The order runs are written in: by the tally row each one adds to."""
    return (run.schedule_id or 0, run_tallies.quarter_of(run), run.pk)


def record_on_schedules(runs: list[Run]) -> None:
    """Last outcome and counters of each schedule, one executemany for the batch."""
    latest: dict[int, Run] = {}
    counts: dict[int, list[int]] = {}
    for run in runs:
        if run.schedule_id is None or run.status == RunStatus.SKIPPED:
            continue
        latest[run.schedule_id] = run
        count = counts.setdefault(run.schedule_id, [0, 0])
        count[0] += 1
        count[1] += run.status in ERROR_OUTCOMES
    rows = []
    # In primary key order, as every process updates them: no deadlock between them.
    for pk, run in sorted(latest.items()):
        duration = run.duration.total_seconds() if run.duration else None
        error = run.error if run.status != RunStatus.SUCCEEDED else ""
        started = run.started_at or run.finished_at
        rows.append((started, run.status, error, duration, *counts[pk], pk))
    fields = ["last_run_at", "last_outcome", "last_error", "last_duration", "run_count",
              "error_count"]  # fmt: skip
    update_each(Schedule, fields, rows, add=2)
