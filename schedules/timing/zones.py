"""Time zone helpers shared by the triggers."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import InvalidTrigger


def get_zone(name: str) -> ZoneInfo:
    """The IANA zone called `name`, or InvalidTrigger naming it."""
    if not isinstance(name, str) or not name:
        raise InvalidTrigger("time zone must be a non-empty IANA name such as 'Europe/Berlin'")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidTrigger(f"unknown time zone '{name}'") from None


def zone_name(zone: tzinfo) -> str:
    return getattr(zone, "key", None) or str(zone)


def require_aware(value: object, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidTrigger(f"{what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidTrigger(f"{what} must be timezone-aware, got naive {value.isoformat()}")
    return value


def to_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def is_imaginary(local: datetime) -> bool:
    """True when a wall-clock time does not exist (skipped by a DST jump)."""
    round_trip = local.astimezone(UTC).astimezone(local.tzinfo)
    return round_trip.replace(tzinfo=None, fold=0) != local.replace(tzinfo=None, fold=0)
