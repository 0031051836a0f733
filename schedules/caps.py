"""Caps on a run's error and traceback before they are stored, rendered or broadcast.

NUL characters and lone surrogates are replaced too (storable.py): the database refuses
them, and one refused outcome held back every outcome written after it.

A task can raise an exception whose text is megabytes long; it is kept as its head
and its tail with a note of how much was cut between them, so the cause (usually
at the start) and the failing frame (at the end) both survive.
"""

from __future__ import annotations

from .conf import setting
from .storable import storable_text


def cap(text: str | None, limit: int) -> str:
    """`text` cut to at most about `limit` characters, keeping its head and tail, with
    what no database stores replaced (storable.py)."""
    text = storable_text(text or "")
    if len(text) <= limit:
        return text
    note_room = 60
    keep = max(limit - note_room, 2)
    head = keep * 2 // 3
    tail = keep - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n… [{cut:,} characters cut] …\n{text[len(text) - tail :]}"


def cap_error(text: str | None) -> str:
    return cap(text, setting("SILLO_ERROR_MAX_CHARS"))


def cap_traceback(text: str | None) -> str:
    return cap(text, setting("SILLO_TRACEBACK_MAX_CHARS"))
