"""What a schedule row shows: text, flags with their reasons, allowed actions, run state."""

from __future__ import annotations

from dataclasses import dataclass, field

from .access import abilities
from .models import Run, Schedule, ScheduleStatus
from .queries import latest_runs, running_counts
from .registry import Registry, registry
from .scheduler.store import parsed_trigger
from .services import TRANSITIONS
from .timing import InvalidTrigger


@dataclass
class Flag:
    name: str
    reason: str


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
    extra: dict = field(default_factory=dict)

    @property
    def pk(self) -> int:
        return self.schedule.pk


def schedule_flags(schedule: Schedule, tasks: Registry) -> tuple[str, list[Flag]]:
    found = tasks.declarations.get(schedule.task_name, [])
    flags = []
    if not found:
        flags.append(
            Flag(
                "orphan",
                f"No code declares task '{schedule.task_name}': this schedule never runs. "
                "It is kept until someone deletes it.",
            )
        )
    elif len(found) > 1:
        modules = ", ".join(d.qualname for d in found)
        flags.append(
            Flag(
                "duplicate",
                f"Task '{schedule.task_name}' is declared more than once ({modules}): "
                "none of them runs until one is renamed.",
            )
        )
    try:
        text = parsed_trigger(schedule).describe()
    except InvalidTrigger as exc:
        text = "invalid trigger"
        flags.append(Flag("invalid", f"The trigger does not parse ({exc}); it never fires."))
    return text, flags


def build_rows(schedules: list[Schedule], user, tasks: Registry = registry) -> list[ScheduleRow]:
    """Rows for a page of schedules: two queries, whatever the page size."""
    ids = [s.pk for s in schedules]
    running = running_counts(ids)
    latest = latest_runs(ids)
    can = abilities(user)
    rows = []
    for schedule in schedules:
        text, flags = schedule_flags(schedule, tasks)
        actions = []
        if can["can_operate"]:
            if ScheduleStatus.PAUSED in TRANSITIONS[schedule.status]:
                actions.append("pause")
            if schedule.status == ScheduleStatus.PAUSED:
                actions.append("resume")
            if ScheduleStatus.CANCELLED in TRANSITIONS[schedule.status]:
                actions.append("cancel")
        if can["can_change"]:
            declaration = tasks.get(schedule.task_name)
            if declaration is not None and declaration.default_trigger is not None:
                actions.append("reset")
        if can["can_delete"]:
            actions.append("delete")
        in_flight = running.get(schedule.pk, 0)
        blocked = ""
        if any(f.name in ("orphan", "duplicate") for f in flags):
            blocked = "its task is " + (
                "not declared" if flags[0].name == "orphan" else "declared twice"
            )
        elif in_flight >= schedule.max_instances and schedule.overlap != "replace":
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
            )
        )
    return rows
