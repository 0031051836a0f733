"""Text and JSON as every supported database stores them.

A task's output, error, traceback and result may hold what a database refuses:
NUL characters (PostgreSQL's text and jsonb) and lone surrogates, which
Python makes of undecodable bytes (neither SQLite nor PostgreSQL can encode
them as UTF-8). One such run used to stop every outcome after it from being
written. Each is replaced with U+FFFD, as a decoder shows a bad byte.

Pure Python, no Django: the worker processes use it too (child.jsonable).
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# The same characters as json.dumps writes them (ASCII escapes, lowercase): a NUL, a high
# surrogate not followed by a low one, a low one not after a high one. A pair is a
# character beyond the BMP (an emoji), which every database stores.
_UNSTORABLE_ESCAPED = re.compile(
    r"\\u0000"
    r"|\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f][0-9a-f]{2})"
    r"|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}"
)


def storable_text(text: str) -> str:
    """`text` with NUL and lone surrogates replaced (the same object when it has none)."""
    if not _UNSTORABLE.search(text):
        return text
    return _UNSTORABLE.sub(REPLACEMENT, text)


def needs_cleaning(json_text: str) -> bool:
    """Whether a value, as json.dumps wrote it (ASCII), holds an unstorable character."""
    return bool(_UNSTORABLE_ESCAPED.search(json_text))


def storable_json(value: Any) -> Any:
    """A JSON value (dicts, lists, strings, numbers) with its strings made storable, keys
    included. A surrogate pair written as two escapes is whole again after json.loads,
    so only lone ones are replaced."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(item) for item in value]
    return value
