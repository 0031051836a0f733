"""The sweeps any live scheduler runs: late slots, stuck runs, half-open probes.

They read without a transaction and open one only when something changes
(SQLite's IMMEDIATE transactions take the write lock at BEGIN). They depend on
no particular scheduler: a slot of a schedule whose scheduler died is late for
every other one that is alive.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef

from ..choices import RunReason, RunStatus, ScheduleStatus
from ..models import Run, Schedule
from ..registry import Registry, registry
from . import machine
from .models import Incident, IncidentEvent
from .record import Edge
from .rules import rules_for

LIMIT = 500
P95_SAMPLE = 20


def late_grace(schedule: Schedule, rules: machine.Rules) -> float:
    return rules.late_after if rules.late_after is not None else schedule.misfire_grace


def check_late(*, now: datetime, tasks: Registry = registry) -> int:
    """Open a late incident for each active schedule whose slot passed its grace unclaimed."""
    open_late = Incident.objects.open().filter(schedule=OuterRef("pk"), kind=machine.LATE)
    candidates = (
        Schedule.objects.filter(status=ScheduleStatus.ACTIVE, next_run_at__lt=now)
        .exclude(Exists(open_late))
        .order_by("next_run_at")[:LIMIT]
    )
    late = [
        s
        for s in candidates
        if (now - s.next_run_at).total_seconds() > late_grace(s, rules_for(s, tasks))
    ]
    if not late:
        return 0
    with transaction.atomic(), Edge([s.pk for s in late], now=now, tasks=tasks) as edge:
        for schedule in late:
            current = edge.schedules.get(schedule.pk)
            if current is None or current.status != ScheduleStatus.ACTIVE:
                continue
            if current.next_run_at != schedule.next_run_at:
                continue  # claimed meanwhile
            rules = edge.rules(schedule.pk)
            edge.apply(
                schedule.pk,
                machine.slot_missed(
                    edge.states[schedule.pk],
                    rules,
                    slot=current.next_run_at,
                    grace=late_grace(current, rules),
                    now=now,
                ),
            )
    return len(late)


def after_claims(
    *, claimed: list[tuple[Schedule, datetime]], now: datetime, tasks: Registry = registry
) -> None:
    """In the claim's transaction: a slot claimed past its grace is late; one on time ends it."""
    if not claimed:
        return
    ids = [schedule.pk for schedule, _ in claimed]
    open_late = set(
        Incident.objects.open()
        .filter(schedule_id__in=ids, kind=machine.LATE)
        .values_list("schedule_id", flat=True)
    )
    changes = []
    for schedule, slot in claimed:
        lateness = (now - slot).total_seconds()
        if lateness <= schedule.misfire_grace and schedule.pk not in open_late:
            continue  # the common case: on time and nothing open; no rules to read
        # Read once: a restart's catch-up makes this check for every schedule.
        rules = rules_for(schedule, tasks)
        grace = late_grace(schedule, rules)
        if lateness > grace and schedule.pk not in open_late:
            changes.append((schedule, slot, rules, grace, True))
        elif lateness <= grace and schedule.pk in open_late:
            changes.append((schedule, slot, rules, grace, False))
    if not changes:
        return
    # The claim locked and read these schedules: the edge need not read them again.
    locked = [schedule for schedule, *_ in changes]
    with Edge([s.pk for s in locked], now=now, tasks=tasks, locked=locked) as edge:
        for schedule, slot, rules, grace, missed in changes:
            state = edge.states[schedule.pk]
            if missed:
                step = machine.slot_missed(state, rules, slot=slot, grace=grace, now=now)
            else:
                step = machine.slot_on_time(state, slot=slot, now=now)
            edge.apply(schedule.pk, step)


def recent_durations(schedule_id: int) -> list[float]:
    runs = (
        Run.objects.filter(schedule_id=schedule_id, status=RunStatus.SUCCEEDED)
        .order_by("-queued_at", "-pk")
        .values_list("started_at", "finished_at")[:P95_SAMPLE]
    )
    return [(f - s).total_seconds() for s, f in runs if s and f]


def check_stuck(*, now: datetime, tasks: Registry = registry) -> int:
    """Open a stuck incident for a run past its expected duration; close those whose run ended."""
    opened = 0
    stuck_open = {i.schedule_id: i for i in Incident.objects.open().filter(kind=machine.STUCK)}
    running = list(
        Run.objects.running()
        .filter(schedule__isnull=False, started_at__isnull=False)
        .select_related("schedule")
        .order_by("started_at")[:LIMIT]
    )
    running_ids = {run.pk for run in running}
    overdue = []
    for run in running:
        if run.schedule_id in stuck_open or any(
            r[0].schedule_id == run.schedule_id for r in overdue
        ):
            continue
        rules = rules_for(run.schedule, tasks)
        running_for = (now - run.started_at).total_seconds()
        if rules.max_duration is None and running_for <= rules.stuck_min_seconds:
            continue  # the p95 rule never fires this early: spare the history query
        needs_history = rules.max_duration is None and rules.stuck_factor is not None
        threshold = machine.stuck_threshold(
            rules, recent_durations(run.schedule_id) if needs_history else []
        )
        if threshold is not None and running_for > threshold:
            overdue.append((run, running_for, threshold))
    ended = [i for i in stuck_open.values() if i.run_id not in running_ids]
    if not overdue and not ended:
        return 0
    ended_status = dict(
        Run.objects.filter(pk__in=[i.run_id for i in ended]).values_list("pk", "status")
    )
    with (
        transaction.atomic(),
        Edge(
            [r.schedule_id for r, *_ in overdue] + [i.schedule_id for i in ended],
            now=now,
            tasks=tasks,
        ) as edge,
    ):
        for incident in ended:
            if incident.schedule_id in edge.schedules:
                status = ended_status.get(incident.run_id, "deleted")
                edge.apply(
                    incident.schedule_id,
                    machine.run_gone(
                        edge.states[incident.schedule_id], run_id=incident.run_id, status=status
                    ),
                )
        for run, running_for, threshold in overdue:
            if run.schedule_id not in edge.schedules:
                continue
            edge.apply(
                run.schedule_id,
                machine.run_overdue(
                    edge.states[run.schedule_id],
                    edge.rules(run.schedule_id),
                    run_id=run.pk,
                    running_for=running_for,
                    threshold=threshold,
                    now=now,
                ),
                run,
            )
            opened += 1
    return opened


def check_probes(*, now: datetime, tasks: Registry = registry) -> int:
    """Half-open: queue one probe run of an auto-paused schedule after its cool-down."""
    queued = 0
    for incident in Incident.objects.open().filter(
        kind=machine.AUTO_PAUSED, schedule__isnull=False
    ):
        schedule = incident.schedule
        rules = rules_for(schedule, tasks)
        if rules.probe_after is None or schedule.status != ScheduleStatus.PAUSED:
            continue
        last = (
            IncidentEvent.objects.filter(incident=incident, event="probe")
            .order_by("-at")
            .values_list("at", "run_id")
            .first()
        )
        if (
            last is not None
            and Run.objects.filter(
                pk=last[1], status__in=(RunStatus.QUEUED, RunStatus.RUNNING)
            ).exists()
        ):
            continue  # the probe is still on its way
        state = machine.State(
            paused=True,
            open={
                machine.AUTO_PAUSED: machine.OpenIncident(machine.AUTO_PAUSED, incident.opened_at)
            },
        )
        if not machine.probe_due(state, rules, last_probe_at=last[0] if last else None, now=now):
            continue
        if tasks.refusal(schedule.task_name):
            continue
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
            )
            IncidentEvent.objects.create(
                incident=incident,
                at=now,
                event="probe",
                run_id=run.pk,
                text=f"half-open: probe run {run.pk} queued after a {rules.probe_after:g}s "
                "cool-down",
            )
        queued += 1
    return queued


def open_count() -> int:
    return Incident.objects.open().count()


def since(now: datetime, seconds: float) -> datetime:
    return now - timedelta(seconds=seconds)
