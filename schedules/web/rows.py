"""What a schedule row shows: text, flags with their reasons, allowed actions, run state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from ..defaults import is_default_record
from ..flags import Flag, describe
from ..models import Run, Schedule, ScheduleStatus
from ..registry import Registry, registry
from ..selectors import active_runs, recent_outcomes
from ..services import allowed_verbs
from .access import abilities
from .charts import Strip, outcome_strip


@dataclass
class ScheduleRow:
    schedule: Schedule
    trigger_text: str
    flags: list[Flag]
    actions: list[str]
    run_state: Run | None
    running: int
    can_run_now: bool
    run_now_blocked: str = ""
    strip: Strip | None = None  # the last 20 outcomes

    @property
    def pk(self) -> int:
        return self.schedule.pk

    @property
    def next_run(self) -> datetime | None:
        """The next slot of an active schedule, if the operator's zone can show it: a
        record saved before triggers were kept a day from year 9999's end (or edited
        by hand) has none east of UTC. Its flag says why the trigger is invalid."""
        at = self.schedule.next_run_at
        if at is None or self.schedule.status != ScheduleStatus.ACTIVE:
            return None
        try:
            timezone.localtime(at)
        except OverflowError:
            return None
        return at


def build_rows(schedules: list[Schedule], user, tasks: Registry = registry) -> list[ScheduleRow]:
    """Rows for a page of schedules: three queries, whatever the page size."""
    ids = [s.pk for s in schedules]
    running = Run.objects.running_counts(ids)
    latest = active_runs(ids)
    outcomes = recent_outcomes(ids)
    can = abilities(user)
    rows = []
    for schedule in schedules:
        text, flags = describe(schedule, tasks)
        actions = []
        if can["can_operate"]:
            actions += allowed_verbs(schedule.status)
        if can["can_change"] and is_default_record(schedule, tasks):
            actions.append("reset")
        if can["can_delete"]:
            actions.append("delete")
        in_flight = running.get(schedule.pk, 0)
        blocked = tasks.refusal(schedule.task_name)
        if not blocked and in_flight >= schedule.max_instances and schedule.overlap != "replace":
            blocked = f"{in_flight} run(s) in flight (max_instances={schedule.max_instances})"
        rows.append(
            ScheduleRow(
                schedule=schedule,
                trigger_text=text,
                flags=flags,
                actions=actions,
                run_state=latest.get(schedule.pk),
                running=in_flight,
                can_run_now=can["can_operate"],
                run_now_blocked=blocked,
                strip=outcome_strip(outcomes.get(schedule.pk, [])),
            )
        )
    return rows
