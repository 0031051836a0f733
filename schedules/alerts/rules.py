"""A schedule's alert rules: the global defaults, then its task's `alert=`, then its own.

Each layer is a dict of some of the `Rules` fields; a later layer wins key by
key. Task rules are read from the declaration each time, so a change in code
applies to every schedule of the task that does not override that key.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..conf import setting
from ..registry import Registry, registry
from .machine import Rules
from .schema import RULE_NAMES, InvalidRules, clean_rules


def build(*layers: dict[str, Any]) -> Rules:
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer or {})
    if "notify" in merged:
        merged["notify"] = frozenset(merged["notify"])
    return Rules(**merged)


def global_rules() -> dict[str, Any]:
    return clean_rules(setting("SILLO_ALERTS"))


def task_rules(task_name: str, tasks: Registry = registry) -> dict[str, Any]:
    declaration = tasks.get(task_name)
    return dict(declaration.alert) if declaration is not None else {}


def rules_for(schedule: Any, tasks: Registry = registry) -> Rules:
    """The effective rules of a schedule (a Schedule, or anything with task_name and alert)."""
    own = schedule.alert or {}
    try:
        own = clean_rules(own)
    except InvalidRules:
        own = {}  # a record edited by hand into nonsense alerts with the defaults
    return build(global_rules(), task_rules(schedule.task_name, tasks), own)


def explained(schedule: Any, tasks: Registry = registry) -> list[tuple[str, Any, str]]:
    """(rule, effective value, where it comes from) for the schedule page."""
    layers = [
        ("default", asdict(Rules())),
        ("settings", global_rules()),
        ("task", task_rules(schedule.task_name, tasks)),
        ("schedule", schedule.alert or {}),
    ]
    effective = asdict(rules_for(schedule, tasks))
    rows = []
    for name in RULE_NAMES:
        source = next(origin for origin, layer in reversed(layers) if name in layer)
        value = effective[name]
        if name == "notify":
            value = ", ".join(sorted(value)) or "nothing"
        rows.append((name, value, source))
    return rows
