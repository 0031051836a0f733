"""The timing engine: triggers and their fire times. Pure Python, no Django.

>>> from datetime import datetime, UTC
>>> Cron("0 9 * * 1-5", "Europe/Berlin").next_fire(datetime(2026, 1, 2, tzinfo=UTC))
datetime.datetime(2026, 1, 2, 9, 0, tzinfo=zoneinfo.ZoneInfo(key='Europe/Berlin'))
"""

from __future__ import annotations

from .base import Trigger
from .cron import Cron
from .errors import InvalidTrigger
from .preview import display_zone, own_zone, preview_times
from .triggers import Compound, Date, Interval, instant_from_text, trigger_from_spec
from .zones import get_zone

__all__ = [
    "Compound",
    "Cron",
    "Date",
    "Interval",
    "InvalidTrigger",
    "Trigger",
    "display_zone",
    "get_zone",
    "instant_from_text",
    "own_zone",
    "preview_times",
    "trigger_from_spec",
]
