"""Follow-ups: the runs a final outcome queues (`then` on success, `catch` on final failure).

Called inside the transaction that records the upstream outcome (outcomes,
crash recovery, a run failed at claim time), so a follow-up is written with
that outcome or not at all: a crash can neither lose nor double it, and the
run lock of `finish_runs` means one process only records an outcome. The
unique (parent, schedule_code) constraint of chained runs is the safety net.

A follow-up is a queued run (reason `chained`, parent = the upstream run)
that the normal claim path starts; one that cannot run (missing, paused,
cancelled, orphan, duplicate, too deep) is recorded `skipped` with the
reason, so the chain shows where it stopped.
"""

from __future__ import annotations

from datetime import datetime

from .. import counters
from ..chains import stored_codes
from ..choices import ERROR_OUTCOMES, FollowKind
from ..conf import setting
from ..models import Run, RunReason, RunStatus, Schedule, ScheduleStatus
from ..registry import Registry, registry
from . import dispatch


def kind_of(run: Run) -> str | None:
    """Which follow-ups a final outcome triggers: then, catch, or none (skipped, cancelled)."""
    if run.status == RunStatus.SUCCEEDED:
        return FollowKind.THEN
    if run.status in ERROR_OUTCOMES:
        return FollowKind.CATCH
    return None


def queue_follow_ups(runs: list[Run], *, now: datetime, tasks: Registry = registry) -> list[Run]:
    """Create the follow-up runs of these final outcomes; returns them (queued or skipped).

    `runs` are final: no retry follows them. Three queries whatever their number
    (the upstream links, the follow-up schedules, the follow-ups already made).
    """
    upstream = [r for r in runs if r.follow_ups and r.schedule_id and kind_of(r) is not None]
    if not upstream:
        return []
    links = {
        pk: (stored_codes(then), stored_codes(catch), result_as)
        for pk, then, catch, result_as in Schedule.objects.filter(
            pk__in={r.schedule_id for r in upstream}
        ).values_list("pk", "then", "catch", "result_as")
    }
    wanted = {
        (run, code) for run in upstream for code in _codes(links.get(run.schedule_id), kind_of(run))
    }
    if not wanted:
        return []
    targets = {s.code: s for s in Schedule.objects.filter(code__in=sorted({c for _, c in wanted}))}
    # Recorded already (a replayed batch): never twice.
    made = set(
        Run.objects.filter(
            reason=RunReason.CHAINED, parent_id__in=[r.pk for r in upstream]
        ).values_list("parent_id", "schedule_code")
    )
    limit = setting("SILLO_CHAIN_MAX_DEPTH")
    created: list[Run] = []
    for run in upstream:
        kind = kind_of(run)
        _then, _catch, result_as = links.get(run.schedule_id, ([], [], ""))
        for code in _codes(links.get(run.schedule_id), kind):
            if (run.pk, code) in made:
                continue
            made.add((run.pk, code))
            follow = _follow_up(run, code, targets.get(code), kind, result_as, now)
            why = _skip_reason(follow, targets.get(code), limit, tasks)
            if why:
                follow.status, follow.finished_at, follow.error = RunStatus.SKIPPED, now, why
            created.append(follow)
    Run.objects.bulk_create(created)
    counters.tally(run for run in created if run.status == RunStatus.SKIPPED)
    for run in created:
        if run.status == RunStatus.QUEUED:
            dispatch.enqueue(run)
    return created


def _codes(link: tuple | None, kind: str | None) -> list[str]:
    if link is None or kind is None:
        return []
    return link[0] if kind == FollowKind.THEN else link[1]


def _follow_up(
    run: Run, code: str, target: Schedule | None, kind: str, result_as: str, now: datetime
) -> Run:
    kwargs = dict(target.kwargs) if target is not None and isinstance(target.kwargs, dict) else {}
    if result_as:
        kwargs[result_as] = run.result if kind == FollowKind.THEN else _failure(run)
    return Run(
        schedule=target,
        schedule_code=code,
        task_name=target.task_name if target is not None else "",
        kwargs=kwargs,
        reason=RunReason.CHAINED,
        slot=None,
        queued_at=now,
        not_before=now,
        dispatch=target.dispatch if target is not None else run.dispatch,
        parent_id=run.pk,
        depth=run.depth + 1,
        requested_by_id=run.requested_by_id,
    )


def _failure(run: Run) -> dict:
    """What a catch follow-up receives in `result_as`: which run failed, and how."""
    return {"run": run.pk, "schedule": run.schedule_code, "status": run.status,
            "error": run.error}  # fmt: skip


def _skip_reason(follow: Run, target: Schedule | None, limit: int, tasks: Registry) -> str:
    if target is None:
        return f"skipped: follow-up schedule '{follow.schedule_code}' does not exist"
    if follow.depth > limit:
        return (
            f"skipped: the chain is {follow.depth} follow-ups deep (SILLO_CHAIN_MAX_DEPTH={limit})"
        )
    if target.status in (ScheduleStatus.PAUSED, ScheduleStatus.CANCELLED):
        return f"skipped: follow-up schedule '{target.code}' is {target.status}"
    refusal = tasks.refusal(target.task_name)
    return f"skipped: {refusal}" if refusal else ""
