"""Next fire times as an operator reads them: in the schedule's zone and in their own."""

from __future__ import annotations

from datetime import datetime, tzinfo

from .base import Trigger
from .errors import InvalidTrigger


def preview_times(
    trigger: Trigger,
    *,
    count: int,
    after: datetime,
    zone: tzinfo,
    operator_zone: tzinfo | None = None,
) -> list[tuple[datetime, datetime]]:
    """The next `count` fire times after `after`, each as (in `zone`, in `operator_zone`).

    Without an operator zone both sides are in `zone`. Every page, the CLI and
    the live preview list fire times through this one function, so this is where
    a time that no zone can show (near year 1 or 9999) becomes InvalidTrigger.
    """
    other = operator_zone or zone
    try:
        return [(t.astimezone(zone), t.astimezone(other)) for t in trigger.preview(count, after)]
    except (OverflowError, ValueError) as exc:
        raise InvalidTrigger(f"trigger: cannot compute fire times: {exc}") from None


def display_zone(trigger: Trigger) -> str:
    """The zone name a schedule shows times in when none is chosen: its cron's, else UTC."""
    return getattr(trigger, "tz", "UTC")


def own_zone(trigger: Trigger, default: tzinfo) -> tzinfo:
    """The zone a trigger is written in (a cron's or a date's), else `default`."""
    return getattr(trigger, "zone", None) or default
