"""Human text for triggers. Cron wording comes from cron-descriptor."""

from __future__ import annotations

from datetime import timedelta

from cron_descriptor import ExpressionDescriptor, Options


def describe_cron(expression: str, tz: str) -> str:
    """'At 09:00, Monday through Friday, Europe/Berlin' for an expanded expression."""
    options = Options()
    options.use_24hour_time_format = True
    options.day_of_week_start_index_zero = True
    options.verbose = False
    try:
        text = ExpressionDescriptor(expression, options).get_description()
    except Exception:  # cron-descriptor raises a zoo of types; the text is only cosmetic
        text = f"Cron '{expression}'"
    return f"{text}, {tz}"


_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def describe_duration(value: timedelta) -> str:
    """'1 hour 30 minutes', '45 seconds', '0.25 seconds'."""
    total = value.total_seconds()
    if total < 1 or total != int(total):
        if total >= 60:
            whole = describe_duration(timedelta(seconds=int(total)))
            return f"{whole} {total - int(total):.6g} seconds".replace(" 0.", " and 0.")
        return f"{total:g} seconds"
    remaining = int(total)
    parts = []
    for name, size in _UNITS:
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count} {name}{'s' if count != 1 else ''}")
    return " ".join(parts)
