"""The incident machine's database edge: load a schedule's state, apply the actions.

Every function runs inside the caller's transaction (the outcome's, or the
sweep's), after the schedule rows are locked, so an incident, its timeline and
its notifications are written together with what caused them, or not at all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from functools import partial
from typing import Any

from django.db import IntegrityError, connection, transaction

from .. import counters
from ..bulk import insert_rows, unsaved
from ..choices import ERROR_OUTCOMES, RunStatus, ScheduleStatus
from ..models import Run, Schedule
from ..notify import outbox, payload
from ..registry import Registry, registry
from ..timing import InvalidTrigger
from . import machine
from .models import Incident, IncidentEvent, Notification
from .rules import rules_for

logger = logging.getLogger("schedules.outcomes")


class Edge:
    """The open incidents of some schedules, and the actions applied to them.

    Used as a context manager: what the actions write (new incidents, closes,
    timeline events, notifications) is gathered and written when the block
    ends, in a few statements whatever the number of schedules. A scheduler
    back from an outage opens a late incident on every schedule in one claim
    pass, and closes them all a slot later.
    """

    def __init__(
        self,
        schedule_ids: Iterable[int],
        *,
        now: datetime,
        tasks: Registry,
        locked: Iterable[Schedule] = (),
    ) -> None:
        """`locked`: schedules the caller has already locked in this transaction and
        read (a claim's); they are not read again."""
        self.now = now
        self.tasks = tasks
        self.schedules: dict[int, Schedule] = {s.pk: s for s in locked}
        ids = sorted(set(schedule_ids))
        if unread := [pk for pk in ids if pk not in self.schedules]:
            # Locked in primary key order, as every process does: no deadlock between them.
            rows = Schedule.objects.select_for_update().filter(pk__in=unread).order_by("pk")
            self.schedules.update((s.pk, s) for s in rows)
        self.incidents: dict[int, dict[str, Incident]] = {}
        for incident in Incident.objects.open().filter(schedule_id__in=ids):
            self.incidents.setdefault(incident.schedule_id, {})[incident.kind] = incident
        self.states = {pk: self._state(s) for pk, s in self.schedules.items()}
        self.changed: set[int] = set()
        self._opened: list[Incident] = []
        self._closed: dict[int, Incident] = {}  # existing incidents, by pk
        self._notified: dict[int, Incident] = {}
        self._events: list[IncidentEvent] = []
        self._notices: list[tuple[Schedule, machine.Action, Any, Incident]] = []

    def __enter__(self) -> Edge:
        return self

    def __exit__(self, error_type: type[BaseException] | None, *_: object) -> None:
        if error_type is None:
            self.save()

    def _state(self, schedule: Schedule) -> machine.State:
        open_ = {
            kind: machine.OpenIncident(kind, i.opened_at, i.last_notified_at, i.run_id)
            for kind, i in self.incidents.get(schedule.pk, {}).items()
        }
        return machine.State(
            consecutive_failures=schedule.consecutive_failures,
            paused=schedule.status == ScheduleStatus.PAUSED,
            open=open_,
        )

    def rules(self, schedule_id: int) -> machine.Rules:
        return rules_for(self.schedules[schedule_id], self.tasks)

    def apply(self, schedule_id: int, step: tuple[machine.State, list], run: Any = None) -> None:
        state, actions = step
        schedule = self.schedules[schedule_id]
        if state.consecutive_failures != schedule.consecutive_failures:
            schedule.consecutive_failures = state.consecutive_failures
            self.changed.add(schedule_id)
        self.states[schedule_id] = state
        for action in actions:
            self._apply(schedule, action, run)

    def _apply(self, schedule: Schedule, action: machine.Action, run: Any) -> None:
        open_ = self.incidents.setdefault(schedule.pk, {})
        if isinstance(action, machine.Pause):
            # As an operator's pause: no next slot until resumed.
            Schedule.objects.filter(pk=schedule.pk, status=ScheduleStatus.ACTIVE).update(
                status=ScheduleStatus.PAUSED, pause_reason=action.reason[:200], next_run_at=None
            )
            schedule.status = ScheduleStatus.PAUSED
            logger.error(
                "schedule %s %s",
                schedule.code,
                action.reason,
                extra={"schedule": schedule.code, "task_name": schedule.task_name},
            )
            return
        if isinstance(action, machine.Resume):
            try:
                next_at = schedule.get_trigger().next_fire(self.now)
            except InvalidTrigger:
                next_at = None
            Schedule.objects.filter(pk=schedule.pk, status=ScheduleStatus.PAUSED).update(
                status=ScheduleStatus.ACTIVE, pause_reason="", next_run_at=next_at
            )
            schedule.status = ScheduleStatus.ACTIVE
            return
        if isinstance(action, machine.Open):
            incident = unsaved(
                Incident,
                schedule_id=schedule.pk,
                schedule_code=schedule.code,
                task_name=schedule.task_name,
                kind=action.kind,
                summary=action.text,
                run_id=action.run_id,
                opened_at=self.now,
                last_notified_at=self.now if action.notify else None,
            )
            self._opened.append(incident)
            open_[action.kind] = incident
        else:
            incident = open_.get(action.kind)
            if incident is None:
                return
            if isinstance(action, machine.Close):
                incident.closed_at = self.now
                del open_[action.kind]
                if incident.pk is not None:  # one opened in this edge is inserted closed
                    self._closed[incident.pk] = incident
            elif action.notify:
                incident.last_notified_at = self.now
                if incident.pk is not None:
                    self._notified[incident.pk] = incident
        self._events.append(
            unsaved(
                IncidentEvent,
                incident=incident,
                at=self.now,
                event=action.event,
                text=action.text,
                run_id=action.run_id,
            )
        )
        if action.notify:
            self._notices.append((schedule, action, run, incident))

    def save(self) -> None:
        """Write what the actions gathered (the context manager calls it)."""
        # Closes first: a kind closed and opened again in one batch (a success, then a
        # failure) is inserted once the old one no longer holds "one open per kind".
        for field, incidents in (("closed_at", self._closed), ("last_notified_at", self._notified)):
            if incidents:
                Incident.objects.filter(pk__in=sorted(incidents)).update(**{field: self.now})
        refused = self._insert_opened()
        insert_rows([event for event in self._events if id(event.incident) not in refused])
        notices = [notice for notice in self._notices if id(notice[3]) not in refused]
        targets = outbox.targets() if notices else []
        if targets:  # no channel: no payload to build either
            insert_rows([row for notice in notices for row in self._notifications(notice, targets)])
        for pk in sorted(self.changed):
            Schedule.objects.filter(pk=pk).update(
                consecutive_failures=self.schedules[pk].consecutive_failures
            )
        self._opened, self._closed, self._notified, self._events, self._notices = [], {}, {}, [], []

    def _insert_opened(self) -> set[int]:
        """Insert the new incidents; returns the ids (in memory) of those refused because
        another process opened the same one first (opened once: their events go too)."""
        if not self._opened:
            return set()
        try:
            with transaction.atomic():
                insert_rows(self._opened)
            return set()
        except IntegrityError:
            for incident in self._opened:
                incident.pk = None  # the rolled-back insert may have set it
        refused = set()
        for incident in self._opened:
            try:
                with transaction.atomic():
                    incident.save()
            except IntegrityError:
                logger.warning(
                    "%s incident of schedule %s already open elsewhere; not opened again",
                    incident.kind,
                    incident.schedule_code,
                )
                refused.add(id(incident))
        return refused

    def _notifications(self, notice, targets) -> list[Notification]:
        schedule, action, run, incident = notice
        document = payload.build(
            event=action.event,
            schedule_code=schedule.code,
            task_name=schedule.task_name,
            schedule_id=schedule.pk,
            run=run,
            at=self.now,
            text=action.text,
            incident_id=incident.pk,
            kind=incident.kind,
        )
        return outbox.notifications(
            incident=incident, event=action.event, payload=document, now=self.now, targets=targets
        )

    def probe_run_id(self, schedule_id: int) -> int | None:
        incident = self.incidents.get(schedule_id, {}).get(machine.AUTO_PAUSED)
        if incident is None or incident.pk is None:
            return None  # none open, or opened in this batch: no probe queued yet
        return (
            IncidentEvent.objects.filter(incident=incident, event="probe")
            .order_by("-at", "-pk")
            .values_list("run_id", flat=True)
            .first()
        )


def after_outcomes(
    *, runs: list[Run], retried: set[int], now: datetime, tasks: Registry = registry
) -> None:
    """Incidents, notifications, last success/failure and logs of finished runs.

    Called by the scheduler inside the transaction that records the outcomes;
    `retried` holds the ids of runs whose retry was queued (not final).
    """
    # Logged once recorded: a write that is rolled back and retried logs once.
    transaction.on_commit(partial(_log, list(runs), set(retried)))
    counters.tally(runs)
    counted = [r for r in runs if r.schedule_id is not None and r.status != RunStatus.SKIPPED]
    if not counted:
        return
    _stamp(counted, now)
    involved = _involved(counted, retried)
    if not involved:
        return  # the common case: successes of schedules with nothing open
    with Edge(involved, now=now, tasks=tasks) as edge:
        for run in counted:
            if run.schedule_id not in edge.schedules:
                continue
            probe = edge.probe_run_id(run.schedule_id)
            step = machine.after_outcome(
                edge.states[run.schedule_id],
                edge.rules(run.schedule_id),
                status=run.status,
                final=run.pk not in retried,
                run_id=run.pk,
                now=now,
                probe=probe is not None and probe == run.pk,
            )
            edge.apply(run.schedule_id, step, run)


def _involved(runs: list[Run], retried: set[int]) -> set[int]:
    """Schedules whose alert state these outcomes can change, in one query.

    A final failure always can; a success only if the schedule has failures
    counted or an incident open; a failure with a retry to follow never does.
    Plain SQL: this runs for every outcome, and the ORM's compilation of it
    cost more than the query.
    """
    failed = {r.schedule_id for r in runs if r.status in ERROR_OUTCOMES and r.pk not in retried}
    others = sorted({r.schedule_id for r in runs} - failed)
    if not others:
        return failed
    q = connection.ops.quote_name
    schedule, incident = q(Schedule._meta.db_table), q(Incident._meta.db_table)
    sql = (
        f"SELECT s.{q('id')} FROM {schedule} s WHERE s.{q('id')} IN "
        f"({', '.join(['%s'] * len(others))}) AND (s.{q('consecutive_failures')} > 0 OR EXISTS "
        f"(SELECT 1 FROM {incident} i WHERE i.{q('schedule_id')} = s.{q('id')} "
        f"AND i.{q('closed_at')} IS NULL))"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, others)
        return failed | {row[0] for row in cursor.fetchall()}


def _stamp(runs: list[Run], now: datetime) -> None:
    """Last success and last failure of each schedule (for /metrics and the page)."""
    q = connection.ops.quote_name
    for field, statuses in (
        ("last_success_at", (RunStatus.SUCCEEDED,)),
        ("last_failure_at", ERROR_OUTCOMES),
    ):
        ids = sorted({r.schedule_id for r in runs if r.status in statuses})
        if not ids:
            continue
        column = Schedule._meta.get_field(field)
        sql = (
            f"UPDATE {q(Schedule._meta.db_table)} SET {q(column.column)} = %s "
            f"WHERE {q('id')} IN ({', '.join(['%s'] * len(ids))})"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [column.get_db_prep_save(now, connection), *ids])


def _log(runs: list[Run], retried: set[int]) -> None:
    """Outcomes reach the usual tools: final failures at ERROR, retries at WARNING."""
    for run in runs:
        extra = {
            "schedule": run.schedule_code,
            "run_id": run.pk,
            "task_name": run.task_name,
            "attempt": run.attempt,
            "status": run.status,
        }
        if run.status == RunStatus.SUCCEEDED:
            logger.info("run %s of %s succeeded", run.pk, run.schedule_code, extra=extra)
        elif run.status in ERROR_OUTCOMES and run.pk in retried:
            logger.warning(
                "run %s of %s (task %s) %s on attempt %s; retrying: %s",
                run.pk,
                run.schedule_code,
                run.task_name,
                run.status,
                run.attempt,
                run.error,
                extra=extra,
            )
        elif run.status in ERROR_OUTCOMES:
            logger.error(
                "run %s of %s (task %s) %s after %s attempt(s): %s",
                run.pk,
                run.schedule_code,
                run.task_name,
                run.status,
                run.attempt,
                run.error,
                extra=extra,
            )


def schedule_resumed(*, schedule: Schedule, by: str, now: datetime) -> None:
    """An operator resumed: close the auto-paused incident, the breaker counts from zero."""
    with Edge([schedule.pk], now=now, tasks=registry) as edge:
        if schedule.pk in edge.schedules:
            edge.apply(schedule.pk, machine.resumed(edge.states[schedule.pk], by=by))
    Schedule.objects.filter(pk=schedule.pk).update(pause_reason="")


def schedule_stopped(*, schedule: Schedule, why: str, now: datetime) -> None:
    """Paused, cancelled or completed by an operator: a late incident no longer applies."""
    with Edge([schedule.pk], now=now, tasks=registry) as edge:
        if schedule.pk in edge.schedules:
            edge.apply(schedule.pk, machine.stopped(edge.states[schedule.pk], why=why))


def schedule_deleted(*, schedule: Schedule, now: datetime) -> None:
    """A deleted schedule's open incidents close: nothing is left to fail or be late."""
    for incident in Incident.objects.open().filter(schedule_id=schedule.pk):
        Incident.objects.filter(pk=incident.pk).update(closed_at=now)
        IncidentEvent.objects.create(
            incident=incident, at=now, event="closed", text="the schedule was deleted"
        )
