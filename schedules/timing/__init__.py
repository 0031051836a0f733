"""The timing engine: triggers and their fire times. Pure Python, no Django.

>>> from datetime import datetime, UTC
>>> Cron("0 9 * * 1-5", "Europe/Berlin").next_fire(datetime(2026, 1, 2, tzinfo=UTC))
datetime.datetime(2026, 1, 2, 9, 0, tzinfo=zoneinfo.ZoneInfo(key='Europe/Berlin'))
"""

from __future__ import annotations

from .base import Trigger
from .cron import Cron
from .errors import InvalidTrigger
from .triggers import Compound, Date, Interval, instant_from_text, trigger_from_spec


def describe(trigger: Trigger) -> str:
    """Human text for any trigger."""
    return trigger.describe()


__all__ = [
    "Compound",
    "Cron",
    "Date",
    "Interval",
    "InvalidTrigger",
    "Trigger",
    "describe",
    "instant_from_text",
    "trigger_from_spec",
]
