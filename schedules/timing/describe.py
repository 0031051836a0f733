"""Human text for triggers. Cron wording comes from cron-descriptor."""

from __future__ import annotations

import re
from datetime import timedelta
from functools import lru_cache

from cron_descriptor import ExpressionDescriptor, Options


def describe_cron(expression: str, tz: str) -> str:
    """'At 09:00, Monday through Friday, Europe/Berlin' for an expanded expression."""
    fields = expression.split()
    # cron-descriptor words one special day right (L, 15W, 5#3, 5L) but garbles a list
    # that holds one ("1W,15W,L" read "the first weekday"; "0#5,6#5" lost "fifth"): such
    # a field is worded here, item by item, after the rest of the expression.
    lists = [
        (index, fields[index].split(","))
        for index in (2, 4)
        if len(fields) == 5 and "," in fields[index] and _SPECIAL.search(fields[index])
    ]
    # Both day fields restricted: a day matching either fires (cron's OR), said "or on".
    both = len(fields) == 5 and fields[2] not in ("*", "?") and fields[4] not in ("*", "?")
    for index, _ in lists:
        fields[index] = "*"
    text = _described(" ".join(fields)) or f"Cron '{expression}'"
    for n, (index, items) in enumerate(lists):
        phrases = [_item_phrase(index, item) for item in items]
        if None in phrases:
            return f"Cron '{expression}', {tz}"
        other_said = (6 - index) not in dict(lists) or n > 0  # the other day field, 2 or 4
        text += (", or on " if both and other_said else ", on ") + _joined(phrases)
        text += " of the month"
    return f"{text}, {tz}"


_SPECIAL = re.compile(r"[LW#]")


def _described(expression: str) -> str:
    options = Options()
    options.use_24hour_time_format = True
    options.day_of_week_start_index_zero = True
    options.verbose = False
    try:
        return ExpressionDescriptor(expression, options).get_description()
    except Exception:  # cron-descriptor raises a zoo of types; the text is only cosmetic
        return ""


@lru_cache(maxsize=1024)  # a few hundred distinct items exist; each reading costs ~0.2 ms
def _item_phrase(index: int, item: str) -> str | None:
    """'the fifth Sunday', 'the weekday nearest day 15', 'day 3', 'every Monday' for one
    list item (read as the whole field by cron-descriptor, which words it right)."""
    fields = ["0", "0", "*", "*", "*"]
    fields[index] = item
    text = _described(" ".join(fields)).removeprefix("At 00:00, ")
    if text.startswith("only on "):  # a plain weekday
        return "every " + text.removeprefix("only on ")
    if text.endswith(" of the month"):  # the fifth Sunday, day 3, 3 days before the last day
        return text.removeprefix("on ").removesuffix(" of the month")
    return None


def _joined(phrases: list[str]) -> str:
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


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
