"""Schedules as a JSON document: export a deployment, review it in git, import it elsewhere.

The document is `{"format": "sillo-dash/schedules", "version": 1, "schedules":
{code: {...}}}`: codes are the keys, so a diff in review reads per schedule.
Each entry holds the task, trigger spec, kwargs, zone, status and execution
options; counters, next slots and runs are state, never exported.

An import is planned first (`plan_import`): every entry is checked as the
dashboard's form checks it (inputs.schedule_problems, the trigger gate), the
follow-ups as the whole file leaves them (chains.chain_problems), and any
problem refuses the whole import with its reason; otherwise the plan
lists what would be created, changed (field: before -> after) or left alone.
`apply_import` carries the plan out through the services (audited, via the
caller's channel) in one transaction. Schedules missing from the file are
left as they are, and runs are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from . import chains, services
from .choices import ScheduleStatus
from .inputs import schedule_problems
from .models import Schedule
from .registry import OPTION_NAMES, Registry, registry
from .timing import InvalidTrigger

FORMAT = "sillo-dash/schedules"
VERSION = 1
FIELDS = ("task_name", "trigger", "kwargs", "tz", "status", *OPTION_NAMES)
# Statuses an import may set, and the service verb that reaches each from another.
STATUS_VERBS = {ScheduleStatus.PAUSED: "pause", ScheduleStatus.ACTIVE: "resume"}
MAX_SCHEDULES = 100_000


class ImportRefused(ValueError):
    """The document cannot be imported; `problems` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:20]) + (" …" if len(problems) > 20 else ""))
        self.problems = problems


def export_schedules(*, now: datetime | None = None) -> dict[str, Any]:
    """Every schedule, by code, as the document an import reads back."""
    schedules = {
        schedule.code: {name: getattr(schedule, name) for name in FIELDS}
        for schedule in Schedule.objects.order_by("code")
    }
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": (now or timezone.now()).isoformat(),
        "schedules": schedules,
    }


@dataclass
class Change:
    code: str
    kind: str  # "create", "update" or "same"
    fields: dict[str, Any] = field(default_factory=dict)  # what the file says
    differences: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # before, after


@dataclass
class ImportPlan:
    changes: list[Change]

    @property
    def creates(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "create"]

    @property
    def updates(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "update"]

    def lines(self) -> list[str]:
        """The difference as a reviewer reads it: + new, ~ changed (field: a -> b), = same."""
        out = []
        for change in self.changes:
            if change.kind == "create":
                out.append(f"+ {change.code} ({change.fields['task_name']})")
            elif change.kind == "update":
                out.append(f"~ {change.code}")
                for name, (before, after) in change.differences.items():
                    out.append(f"    {name}: {before!r} -> {after!r}")
        same = sum(1 for c in self.changes if c.kind == "same")
        out.append(
            f"{len(self.creates)} to create, {len(self.updates)} to change, {same} unchanged"
        )
        return out


def plan_import(document: object, *, tasks: Registry = registry) -> ImportPlan:
    """What importing `document` would do; ImportRefused lists every problem found."""
    entries = _entries(document)
    existing = {s.code: s for s in Schedule.objects.filter(code__in=list(entries))}
    problems: list[str] = []
    changes: list[Change] = []
    for code, raw in entries.items():
        if not isinstance(raw, dict):
            problems.append(f"{code}: must be an object of fields")
            continue
        unknown = sorted(set(raw) - set(FIELDS))
        if unknown:
            problems.append(f"{code}: unknown field(s) {', '.join(unknown)}")
        current = existing.get(code)
        wanted = _wanted(raw, current)
        entry_problems = _problems(code, wanted, current, tasks)
        if entry_problems:
            problems.extend(entry_problems)
            continue
        if current is None:
            changes.append(Change(code, "create", wanted))
            continue
        differences = {
            name: (getattr(current, name), value)
            for name, value in wanted.items()
            if getattr(current, name) != value
        }
        changes.append(Change(code, "update" if differences else "same", wanted, differences))
    problems += _chain_problems(changes, tasks)
    if problems:
        raise ImportRefused(problems)
    return ImportPlan(changes)


def _links(change: Change, tasks: Registry) -> dict[str, Any]:
    """The follow-up fields a change leaves its schedule with: the file's, else (a new
    schedule) its task's declared ones, as schedule_create takes them."""
    declaration = tasks.get(str(change.fields.get("task_name")))
    return {
        name: change.fields[name] if name in change.fields
        else getattr(declaration.options, name) if declaration is not None else ""
        for name in chains.CHAIN_FIELDS
    }  # fmt: skip


def _chain_problems(changes: list[Change], tasks: Registry) -> list[str]:
    """The follow-ups checked as they will be once the whole file is in: a schedule
    may name one the file creates, listed after it (an export lists them by code)."""
    links = {change.code: _links(change, tasks) for change in changes}
    linked = [code for code, fields in links.items() if any(fields.values())]
    if not linked:
        return []
    edges = chains.graph()
    named: set[str] = set()
    for code, fields in links.items():
        follows = [(kind, c) for kind in ("then", "catch")
                   for c in chains.codes_of(fields[kind]) if isinstance(c, str)]  # fmt: skip
        edges[code] = follows
        named.update(c for _, c in follows)
    known: dict[str, Any] = {s.code: s for s in Schedule.objects.filter(code__in=sorted(named))}
    known.update((c.code, _Planned(c.fields["task_name"], c.fields.get("kwargs", {})))
                 for c in changes)  # fmt: skip
    # A code a stored schedule names already is kept, as an edit keeps it (chains.kept_by).
    stored = Schedule.objects.filter(code__in=linked).only("code", "then", "catch")
    kept = {s.code: chains.kept_by(s) for s in stored}
    problems = []
    for code in linked:
        found = chains.chain_problems(code=code, **links[code], tasks=tasks, edges=edges,
                                      known=known, kept=kept.get(code))  # fmt: skip
        problems += [f"{code}: {name}: {text}" for name, text in found.items()]
    return problems


@dataclass(frozen=True)
class _Planned:
    """A schedule as the import leaves it, for the follow-up checks."""

    task_name: str
    kwargs: Any


def _follow_ups_first(changes: list[Change], tasks: Registry) -> list[Change]:
    """The changes in an order where each schedule's follow-ups in the file are saved
    before it: each save passes the chain gate against the schedules saved so far.
    The plan refused cycles, so the order exists."""
    by_code = {change.code: change for change in changes}
    ordered: list[Change] = []
    done: set[str] = set()

    def visit(code: str, trail: frozenset[str]) -> None:
        if code in done or code in trail:
            return
        links = _links(by_code[code], tasks)
        for kind in ("then", "catch"):
            for follow in chains.codes_of(links[kind]):
                if follow in by_code:
                    visit(follow, trail | {code})
        done.add(code)
        ordered.append(by_code[code])

    for change in changes:
        visit(change.code, frozenset())
    return ordered


def apply_import(plan: ImportPlan, *, by: services.Actor, via: str = "") -> ImportPlan:
    """Carry out a plan through the services, all or nothing."""
    with transaction.atomic():
        for change in _follow_ups_first(plan.changes, registry):
            if change.kind == "same":
                continue
            fields = dict(change.fields)
            status = fields.pop("status")
            if change.kind == "create":
                schedule = services.schedule_create(code=change.code, by=by, via=via, **fields)
            else:
                schedule = Schedule.objects.get(code=change.code)
                edited = {k: v for k, v in fields.items() if k in change.differences}
                if edited:
                    trigger = edited.pop("trigger", schedule.trigger)
                    schedule = services.schedule_update(
                        schedule=schedule, trigger=trigger, by=by, via=via, **edited
                    )
            if status != schedule.status:
                verb = STATUS_VERBS[status]
                getattr(services, f"schedule_{verb}")(schedule=schedule, by=by, via=via)
    return plan


def _entries(document: object) -> dict[str, Any]:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ImportRefused([f'not a schedules export (expected "format": "{FORMAT}")'])
    if document.get("version") != VERSION:
        raise ImportRefused([f"unsupported version {document.get('version')!r} (this reads 1)"])
    entries = document.get("schedules")
    if not isinstance(entries, dict):
        raise ImportRefused(['"schedules" must be an object of code: schedule'])
    if len(entries) > MAX_SCHEDULES:
        raise ImportRefused([f"more than {MAX_SCHEDULES:,} schedules in one file"])
    return entries


def _wanted(raw: dict, current: Schedule | None) -> dict[str, Any]:
    """The file's fields; those it leaves out keep their current (or declared) value."""
    wanted = {name: raw[name] for name in FIELDS if name in raw}
    if current is not None:
        for name in FIELDS:
            wanted.setdefault(name, getattr(current, name))
    else:
        wanted.setdefault("status", ScheduleStatus.ACTIVE)
        wanted.setdefault("kwargs", {})
    return wanted


def _problems(code: str, wanted: dict, current: Schedule | None, tasks: Registry) -> list[str]:
    problems = []
    try:
        Schedule._meta.get_field("code").run_validators(code)
    except Exception as exc:  # noqa: BLE001  a ValidationError, named below
        problems.append(f"{code!r}: not a valid code ({' '.join(getattr(exc, 'messages', []))})")
        return problems
    if "task_name" not in wanted or "trigger" not in wanted:
        return [f"{code}: a new schedule needs task_name and trigger"]
    options = {name: wanted[name] for name in OPTION_NAMES if name in wanted}
    found = schedule_problems(
        task_name=str(wanted["task_name"]),
        kwargs=wanted.get("kwargs", {}),
        tz=str(wanted.get("tz") or ""),
        options=options,
        current_task=current.task_name if current is not None else None,
        tasks=tasks,
    )
    problems.extend(f"{code}: {name}: {problem}" for name, problem in found.items())
    try:
        services.normalize_trigger(wanted["trigger"], code=code)
    except InvalidTrigger as exc:
        problems.append(f"{code}: trigger: {exc}")
    status = wanted.get("status")
    allowed = {ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED}
    if current is not None and current.status not in allowed:
        allowed = {current.status}  # a completed or cancelled one stays so
    if status not in allowed:
        problems.append(
            f"{code}: status {status!r} cannot be imported (active or paused; "
            "a completed or cancelled schedule is reactivated by an operator)"
        )
    return problems
