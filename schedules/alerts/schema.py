"""The shape of alert rules: names and validation of one layer. Pure Python, no Django."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from .machine import NOTIFIABLE, Rules

RULE_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Rules))
_POSITIVE_INT = ("after_failures", "pause_after")
_SECONDS = (
    "repeat_every",
    "late_after",
    "max_duration",
    "stuck_factor",
    "probe_after",
    "stuck_min_seconds",
)
_OPTIONAL = (
    "repeat_every",
    "late_after",
    "max_duration",
    "stuck_factor",
    "pause_after",
    "probe_after",
)


class InvalidRules(ValueError):
    """Rules that name an unknown key or a bad value; the message says which."""


def clean_rules(raw: dict[str, Any]) -> dict[str, Any]:
    """Validate a layer of rules; returns it normalized (notify as a sorted list)."""
    if not isinstance(raw, dict):
        raise InvalidRules("alert rules must be a dict")
    unknown = sorted(set(raw) - set(RULE_NAMES))
    if unknown:
        raise InvalidRules(
            f"unknown alert rule(s) {', '.join(unknown)}; known: {', '.join(RULE_NAMES)}"
        )
    cleaned: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None and key in _OPTIONAL:
            cleaned[key] = None
        elif key == "notify":
            events = [value] if isinstance(value, str) else list(value)
            wrong = sorted(set(events) - set(NOTIFIABLE))
            if wrong:
                raise InvalidRules(
                    f"notify: unknown event(s) {', '.join(wrong)}; known: {', '.join(NOTIFIABLE)}"
                )
            cleaned[key] = sorted(set(events))
        elif key == "notify_recovery":
            if not isinstance(value, bool):
                raise InvalidRules("notify_recovery must be true or false")
            cleaned[key] = value
        elif key in _POSITIVE_INT:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidRules(f"{key} must be a whole number of at least 1")
            cleaned[key] = value
        elif key in _SECONDS:
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidRules(f"{key} must be a positive number")
            cleaned[key] = float(value)
    return cleaned
