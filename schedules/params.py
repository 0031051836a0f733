"""Parsing what clients send (ids, page numbers, lists of ids) without ever raising: the
dashboard's requests and the API's cursors.

Every id a client sends is ASCII digits within the database's 64-bit range, or
it is ignored: `"²".isdigit()` is true, `int("9" * 5000)` raises, and SQLite
refuses integers over 2**63 - 1; none of that may turn into a 500.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_ID = 2**63 - 1
MAX_IDS = 1_000  # ids one request may name (a page of the list holds far fewer)


def parse_id(value: object) -> int | None:
    """A positive database id, or None for anything else."""
    if not isinstance(value, str) or not (0 < len(value) <= 19):
        return None
    if not (value.isascii() and value.isdigit()):
        return None
    number = int(value)
    return number if 0 < number <= MAX_ID else None


def parse_ids(values: Iterable[object], limit: int = MAX_IDS) -> list[int]:
    """The valid ids among `values`, at most `limit` of them, in order, without repeats."""
    found: dict[int, None] = {}
    for value in values:
        number = parse_id(value)
        if number is not None:
            found[number] = None
            if len(found) >= limit:
                break
    return list(found)


def valid_id(number: int) -> bool:
    return 0 < number <= MAX_ID
