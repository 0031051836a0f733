"""The one gate for triggers and kwargs: forms, preview, builder, CLI, admin, code defaults
and the scheduler reading a stored record all go through it.

It refuses with a message naming the field (`trigger: ...`, `kwargs.region: ...`), and
it bounds what anyone may send: trigger size and search work (`SILLO_TRIGGER_LIMITS`,
see `timing.Limits`), kwargs depth, size and integer range (`SILLO_KWARGS_MAX_DEPTH`,
`SILLO_KWARGS_MAX_BYTES`, `SILLO_KWARGS_INT_BITS`). It also reads back what is
already stored, however it got there, without raising (`StoredJSONDecoder`).
"""

from __future__ import annotations

import inspect
import json
import math
from dataclasses import fields, replace
from functools import lru_cache
from typing import Any

from .conf import setting
from .timing import InvalidTrigger, Limits, Trigger, trigger_from_spec


class InvalidKwargs(ValueError):
    """Kwargs that break a rule or do not fit the task; the message names the field."""


# ---------------------------------------------------------------- triggers


def trigger_limits() -> Limits:
    """The timing engine's limits, with the overrides of SILLO_TRIGGER_LIMITS.

    Worked out once per value of the setting: the scheduler asks for them twice
    for every due slot, and building them cost more than the rest of the lookup.
    """
    global _limits_read
    overrides = setting("SILLO_TRIGGER_LIMITS")
    read = _limits_read
    if read is not None and read[0] is overrides:
        return read[1]
    known = {f.name for f in fields(Limits)}
    limits = replace(Limits(), **{k: v for k, v in (overrides or {}).items() if k in known})
    _limits_read = (overrides, limits)
    return limits


# (the setting's value, the limits it gives); a changed setting is a new value (conf.py).
_limits_read: tuple[object, Limits] | None = None


def parse_trigger(spec: object) -> Trigger:
    """A trigger from a spec (dict or JSON text) within the limits; InvalidTrigger otherwise.

    Anything other than InvalidTrigger escaping the engine is a bug there, but a
    stored record or a request must never turn it into a crash: it is refused too.
    """
    if not isinstance(spec, dict | str):
        raise InvalidTrigger("trigger: a trigger spec must be a JSON object")
    try:
        return trigger_from_spec(spec, trigger_limits())
    except InvalidTrigger:
        raise
    except (RecursionError, MemoryError):
        raise InvalidTrigger("trigger: the spec is too large or too deeply nested") from None
    except Exception as exc:  # noqa: BLE001 - see the docstring
        raise InvalidTrigger(f"trigger: cannot be used ({type(exc).__name__}: {exc})") from None


# ---------------------------------------------------------------- kwargs


def _int_range() -> tuple[int, int]:
    bits = setting("SILLO_KWARGS_INT_BITS")
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _string_problem(text: str) -> str:
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode)"
    return ""


def kwargs_problem(value: object) -> str:
    """Why `value` breaks the kwargs rules, naming the field, or "" if it is fine.

    Walks the value without recursion, so no nesting depth can exhaust the stack.
    """
    if not isinstance(value, dict):
        return 'kwargs: must be a JSON object, such as {"region": "eu"}'
    max_depth = setting("SILLO_KWARGS_MAX_DEPTH")
    lo, hi = _int_range()
    stack: list[tuple[object, str, int]] = [(value, "kwargs", 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > max_depth:
                return f"{path}: nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return f"{path}: keys must be strings"
                    problem = _string_problem(key)
                    if problem:
                        return f"{path}: a key {problem}"
                    stack.append((child, f"{path}.{_shown(key)}", depth + 1))
            else:
                stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))
        elif isinstance(item, HugeInt):
            return f"{path}: an integer of {len(item)} digits is out of range"
        elif isinstance(item, str):
            problem = _string_problem(item)
            if problem:
                return f"{path}: {problem}"
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not lo <= item <= hi:
                bits = setting("SILLO_KWARGS_INT_BITS")
                return f"{path}: integer out of range (must fit in {bits} bits)"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"{path}: {item} is not allowed (JSON has no NaN or Infinity)"
        else:
            return f"{path}: {type(item).__name__} is not a JSON value"
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    limit = setting("SILLO_KWARGS_MAX_BYTES")
    if size > limit:
        return f"kwargs: {size} bytes is over the limit of {limit} bytes"
    return ""


def _shown(key: str) -> str:
    return key if len(key) <= 40 else key[:37] + "..."


def check_kwargs(value: object) -> dict:
    """`value` if it follows the kwargs rules, else InvalidKwargs naming the field."""
    problem = kwargs_problem(value)
    if problem:
        raise InvalidKwargs(problem)
    return value  # type: ignore[return-value]


def kwargs_from_text(text: str) -> dict:
    """Kwargs typed by an operator: JSON text, bounded before it is parsed."""
    limit = setting("SILLO_KWARGS_MAX_BYTES")
    if len(text) > limit:
        raise InvalidKwargs(f"kwargs: over the limit of {limit} bytes")
    try:
        value = json.loads(text or "{}", parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise InvalidKwargs(f"kwargs: not valid JSON: {exc.msg} (line {exc.lineno})") from None
    except InvalidKwargs:
        raise
    except (ValueError, RecursionError) as exc:  # 4,300+ digit numbers, deep nesting
        raise InvalidKwargs(f"kwargs: not valid JSON: {exc}") from None
    return check_kwargs(value)


def _refuse_constant(name: str) -> float:
    raise InvalidKwargs(f"kwargs: {name} is not allowed (JSON has no NaN or Infinity)")


@lru_cache(maxsize=1024)
def _cached_signature(func: Any) -> inspect.Signature:
    return inspect.signature(func)


def _signature(func: Any) -> inspect.Signature:
    """The scheduler checks every due run's kwargs: a task's signature is read once."""
    try:
        return _cached_signature(func)
    except TypeError:  # an unhashable callable: read it each time
        return inspect.signature(func)


def signature_problem(func: Any, kwargs: object) -> str:
    """Why `kwargs` cannot be passed to `func`, or "" if they can."""
    if not isinstance(kwargs, dict):
        return "kwargs: must be a JSON object"
    names = tuple(kwargs)
    if sum(len(str(name)) for name in names) > CACHED_NAMES_MAX_CHARS:
        return _bind_problem(func, names)  # a request's odd kwargs must not fill the cache
    try:
        return _names_problem(func, names)
    except TypeError:  # an unhashable callable: no cache
        return _bind_problem(func, names)


# Sets of kwargs names longer than this are checked without the cache: it holds a
# schedule's usual names, not whatever an editor's request may send (4,096 entries).
CACHED_NAMES_MAX_CHARS = 500


@lru_cache(maxsize=4096)
def _names_problem(func: Any, names: tuple[str, ...]) -> str:
    # Binding depends on the names alone, not the values: the scheduler checks every
    # due run's kwargs, and a schedule's names rarely change.
    return _bind_problem(func, names)


def _bind_problem(func: Any, names: tuple[str, ...]) -> str:
    try:
        signature = _signature(func)
    except (TypeError, ValueError):
        return ""  # no signature to check against (a builtin, some wrappers)
    try:
        signature.bind(**dict.fromkeys(names))
    except TypeError as exc:
        return f"kwargs: {exc}"
    return ""


def kwargs_fit(task_name: str, kwargs: object, tasks: Any) -> str:
    """Why a schedule's kwargs break the rules or do not fit its task's signature, or ""."""
    problem = kwargs_problem(kwargs)
    if problem:
        return problem
    declaration = tasks.get(task_name)
    if declaration is None:
        return ""  # orphans and duplicates are flagged as such
    problem = signature_problem(declaration.func, kwargs)
    return f"{problem} (task {task_name})" if problem else ""


# ---------------------------------------------------------------- stored JSON


class HugeInt(str):
    """A stored integer too long to convert (4,300+ digits), kept as its digits."""


def _parse_int(text: str) -> int | HugeInt:
    digits = text.lstrip("-")
    return int(text) if len(digits) <= 4000 else HugeInt(text)


class StoredJSONDecoder(json.JSONDecoder):
    """Reads any JSON a record holds, whoever wrote it, without raising past the field.

    Django's JSONField returns the raw text when decoding fails with
    JSONDecodeError; huge integers and deep nesting raise other errors, which
    would break every query that reads the row (the list, the scheduler's due
    query). Here they become a HugeInt or the raw text, which the kwargs rules
    and the trigger parser then refuse with a reason.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> StoredJSONDecoder:
        # Django's JSONField reads every value with json.loads(value, cls=decoder),
        # which builds a decoder and its scanner each time: 4 µs, and a schedule row
        # holds five such values (a claim reads hundreds of rows). A decoder keeps no
        # state between calls (json.loads without `cls` shares one too), so the plain
        # construction returns one shared instance; one with options is its own.
        if args or kwargs:
            return super().__new__(cls)
        if "_shared" not in cls.__dict__:
            cls._shared = super().__new__(cls)
        return cls._shared

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not (args or kwargs) and "scan_once" in self.__dict__:
            return  # the shared instance, set up already
        kwargs.setdefault("parse_int", _parse_int)
        super().__init__(*args, **kwargs)

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().decode(s, *args, **kwargs)
        except RecursionError:
            raise json.JSONDecodeError("nested too deeply to read", s, 0) from None


def printable(text: str) -> str:
    """`text` as any page or terminal can print it: lone surrogates escaped, NUL shown."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\x00", "\\x00")


def json_text(value: object, *, indent: int | None = 2) -> str:
    """A stored JSON value as text for a page, whatever it holds (never raises)."""
    try:
        text = json.dumps(value, indent=indent, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        try:
            text = json.dumps(value, indent=indent, ensure_ascii=True, default=repr)
        except (TypeError, ValueError, RecursionError):
            text = "(a value too large or too deeply nested to show)"
    return printable(text)
