"""Interval, one-shot Date and Compound triggers, and the JSON spec of all kinds."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from heapq import merge

from .base import ONE_MICROSECOND, Trigger
from .cron import Cron
from .describe import describe_duration
from .errors import InvalidTrigger
from .limits import DEFAULT_LIMITS, Limits, current_meter, metered
from .zones import get_zone, is_imaginary, require_aware, to_utc, zone_name

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _seconds(value: object, what: str, limits: Limits = DEFAULT_LIMITS) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTrigger(f"{what} must be a number of seconds")
    # A huge int is refused before any float conversion (which would overflow).
    if isinstance(value, int) and abs(value) > limits.max_seconds:
        raise InvalidTrigger(f"{what} is too large (at most {limits.max_seconds:g} seconds)")
    if not math.isfinite(value):
        raise InvalidTrigger(f"{what} must be a number of seconds")
    if abs(value) > limits.max_seconds:
        raise InvalidTrigger(f"{what} is too large (at most {limits.max_seconds:g} seconds)")
    try:
        return timedelta(seconds=value)
    except OverflowError:
        raise InvalidTrigger(f"{what} {value} is too large") from None


def _text(value: object, what: str, limits: Limits) -> str:
    """A string field of a spec: bounded, and storable and printable everywhere."""
    if not isinstance(value, str):
        raise InvalidTrigger(f"{what} must be a string")
    if len(value) > limits.max_text:
        raise InvalidTrigger(f"{what} is longer than {limits.max_text} characters")
    return _storable(value, what)


def _storable(value: str, what: str) -> str:
    """Refuse what PostgreSQL's jsonb or a page cannot hold: NUL, lone surrogates."""
    if "\x00" in value:
        raise InvalidTrigger(f"{what} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidTrigger(f"{what} contains a lone surrogate (not valid Unicode)") from None
    return value


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


@dataclass(frozen=True)
class Interval(Trigger):
    """Slots at anchor + k * every (k >= 0), each delayed by its own jitter.

    Slots never drift: they are computed from the anchor, not from the last
    run. Jitter is drawn uniformly from [0, jitter] per slot, from a hash of
    the seed and the slot number, so every process computes the same slot.
    """

    every: timedelta
    jitter: timedelta = timedelta(0)
    anchor: datetime = EPOCH
    seed: str = ""
    _every_us: int = field(init=False, repr=False, compare=False)
    _jitter_us: int = field(init=False, repr=False, compare=False)
    _seed_hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        every = _seconds(self.every, "interval every")
        jitter = _seconds(self.jitter, "interval jitter")
        anchor = to_utc(require_aware(self.anchor, "interval anchor"))
        if every <= timedelta(0):
            raise InvalidTrigger(f"interval every must be positive, got {every.total_seconds():g}s")
        if every < timedelta(seconds=1):
            raise InvalidTrigger("interval every must be at least 1 second")
        if jitter < timedelta(0):
            raise InvalidTrigger("interval jitter must not be negative")
        if jitter >= every:
            raise InvalidTrigger("interval jitter must be less than every")
        if not isinstance(self.seed, str):
            raise InvalidTrigger("interval seed must be a string")
        _storable(self.seed, "interval seed")
        object.__setattr__(self, "every", every)
        object.__setattr__(self, "jitter", jitter)
        object.__setattr__(self, "anchor", anchor)
        object.__setattr__(self, "_every_us", every // ONE_MICROSECOND)
        object.__setattr__(self, "_jitter_us", jitter // ONE_MICROSECOND)
        digest = hashlib.blake2b(self.seed.encode(), digest_size=8).digest()
        object.__setattr__(self, "_seed_hash", int.from_bytes(digest, "big"))

    def slot(self, k: int) -> datetime:
        """The k-th slot, jitter included."""
        offset = k * self._every_us
        if self._jitter_us:
            draw = _splitmix64(self._seed_hash ^ k)
            offset += draw % (self._jitter_us + 1)
        return self.anchor + timedelta(microseconds=offset)

    def slots_between(
        self, first: datetime, until: datetime, *, keep: int, cap: int = 10_000
    ) -> tuple[int, list[datetime]]:
        """Counted, not walked: a day of one-second slots costs what one slot does."""
        first_utc, until_utc = to_utc(first), to_utc(until)
        low = max(0, (first_utc - self.anchor) // ONE_MICROSECOND // self._every_us)
        if self.slot(low) < first_utc:
            low += 1  # jitter is below `every`: the first slot is k or k + 1
        high = (until_utc - self.anchor) // ONE_MICROSECOND // self._every_us
        if high < 0:
            return 0, []
        if self.slot(high) > until_utc:
            high -= 1
        count = max(0, high - low + 1)
        latest = [self.slot(k) for k in range(max(low, high - keep + 1), high + 1)]
        return count, latest

    def iter_fires(self, after: datetime) -> Iterator[datetime]:
        after_utc = to_utc(require_aware(after, "after"))
        elapsed_us = (after_utc - self.anchor) // ONE_MICROSECOND
        # Jitter is below `every`, so the first slot after `after` is slot k or k + 1.
        k = max(0, elapsed_us // self._every_us)
        try:
            while True:
                slot = self.slot(k)
                if slot > after_utc:
                    yield slot
                k += 1
        except OverflowError:
            return

    def to_spec(self) -> dict:
        return {
            "kind": "interval",
            "every": self.every.total_seconds(),
            "jitter": self.jitter.total_seconds(),
            "anchor": self.anchor.isoformat(),
            "seed": self.seed,
        }

    def describe(self) -> str:
        text = f"Every {describe_duration(self.every)}"
        if self.jitter:
            text += f", up to {describe_duration(self.jitter)} later at random"
        if self.anchor != EPOCH:
            text += f", from {self.anchor:%Y-%m-%d %H:%M:%S} UTC"
        return text


@dataclass(frozen=True)
class Date(Trigger):
    """Fires once, at `at`."""

    at: datetime

    def __post_init__(self) -> None:
        require_aware(self.at, "date 'at'")
        try:
            to_utc(self.at)
        except OverflowError:
            raise InvalidTrigger(f"date 'at' {self.at.isoformat()} is out of range") from None

    def iter_fires(self, after: datetime) -> Iterator[datetime]:
        try:
            later = to_utc(self.at) > to_utc(require_aware(after, "after"))
        except OverflowError:
            return
        if later:
            yield self.at

    def to_spec(self) -> dict:
        spec = {"kind": "date", "at": self.at.isoformat()}
        if getattr(self.at.tzinfo, "key", None):
            spec["tz"] = zone_name(self.at.tzinfo)
        return spec

    def describe(self) -> str:
        zone = getattr(self.at.tzinfo, "key", None) or self.at.strftime("UTC%z")
        return f"Once, at {self.at:%Y-%m-%d %H:%M}, {zone}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Date) and to_utc(self.at) == to_utc(other.at)

    def __hash__(self) -> int:
        return hash(to_utc(self.at))


@dataclass(frozen=True)
class Compound(Trigger):
    """`any`: fires at every child's slot. `all`: only where every child fires at once."""

    mode: str
    children: tuple[Trigger, ...]
    limits: Limits = field(default=DEFAULT_LIMITS, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in ("any", "all"):
            raise InvalidTrigger(f"compound mode must be 'any' or 'all', got {self.mode!r}")
        children = tuple(self.children)
        if not children:
            raise InvalidTrigger(f"compound '{self.mode}' needs at least one child trigger")
        for child in children:
            if not isinstance(child, Trigger):
                raise InvalidTrigger("compound children must be triggers")
        object.__setattr__(self, "children", children)
        limits = self.limits
        if len(children) > limits.max_children:
            raise InvalidTrigger(
                f"compound '{self.mode}' has {len(children)} children "
                f"(at most {limits.max_children})"
            )
        if _depth(self) > limits.max_depth:
            raise InvalidTrigger(f"compound triggers nest deeper than {limits.max_depth} levels")
        if _size(self) > limits.max_nodes:
            raise InvalidTrigger(f"compound trigger has more than {limits.max_nodes} parts")
        if self.mode == "all" and _next_common(children, EPOCH, limits) is None:
            raise InvalidTrigger(
                "compound 'all' never fires: a child has no slot left to share with the others"
            )

    def iter_fires(self, after: datetime) -> Iterator[datetime]:
        require_aware(after, "after")
        if self.mode == "any":
            meter = current_meter()
            if meter is not None:
                meter.spend(len(self.children))
            streams = [child.iter_fires(after) for child in self.children]
            last = None
            for instant in merge(*streams, key=to_utc):
                if last is None or to_utc(instant) != last:
                    last = to_utc(instant)
                    yield instant
            return
        while (instant := _next_common(self.children, after, self.limits)) is not None:
            yield instant
            after = instant

    def to_spec(self) -> dict:
        return {
            "kind": "compound",
            "mode": self.mode,
            "children": [child.to_spec() for child in self.children],
        }

    def describe(self) -> str:
        joined = "; ".join(f"({child.describe()})" for child in self.children)
        return f"{'Any' if self.mode == 'any' else 'All'} of: {joined}"


def _depth(trigger: Trigger) -> int:
    if isinstance(trigger, Compound):
        return 1 + max(_depth(child) for child in trigger.children)
    return 0


def _size(trigger: Trigger) -> int:
    if isinstance(trigger, Compound):
        return 1 + sum(_size(child) for child in trigger.children)
    return 1


def _next_common(children: tuple[Trigger, ...], after: datetime, limits: Limits) -> datetime | None:
    """The earliest instant after `after` at which every child fires; None if a child
    runs out of slots. Raises BudgetExceeded when the search outgrows its budget.

    Each round asks every child for its next slot after the lower bound and moves
    the bound to the latest; every child asked costs one step of the meter, which
    nested compounds share, so nesting cannot multiply the work past the budget.
    """
    lower = after
    with metered(limits.search_budget) as meter:
        while True:
            meter.spend(len(children))
            slots = []
            for child in children:
                slot = child.next_fire(lower)
                if slot is None:
                    return None
                slots.append(slot)
            latest = max(slots, key=to_utc)
            latest_utc = to_utc(latest)
            if all(to_utc(slot) == latest_utc for slot in slots):
                return latest
            lower = latest_utc - ONE_MICROSECOND


# ---------------------------------------------------------------- specs


def trigger_from_spec(spec: dict | str, limits: Limits = DEFAULT_LIMITS) -> Trigger:
    """Build a trigger from its JSON spec (a dict, or a JSON string), within `limits`.

    Every problem, however odd the input (deep nesting, huge numbers, Unicode
    digits, dates out of range), is an InvalidTrigger naming the field.
    """
    if isinstance(spec, str):
        if len(spec) > limits.max_spec_bytes:
            raise InvalidTrigger(f"trigger spec is longer than {limits.max_spec_bytes} characters")
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as exc:
            raise InvalidTrigger(f"trigger spec is not valid JSON: {exc.msg}") from None
        except (ValueError, RecursionError) as exc:  # 4,300+ digit numbers, deep nesting
            raise InvalidTrigger(f"trigger spec is not valid JSON: {exc}") from None
    counter = [0]
    # One budget for every compound 'all' the spec builds: nesting cannot multiply it.
    with metered(limits.search_budget):
        return _from_spec(spec, "trigger", 0, limits, counter)


def _from_spec(spec: object, path: str, depth: int, limits: Limits, counter: list[int]) -> Trigger:
    if not isinstance(spec, dict):
        raise InvalidTrigger(f"{path}: a trigger spec must be a JSON object")
    if depth > limits.max_depth:
        raise InvalidTrigger(
            f"{path}: compound triggers nest deeper than {limits.max_depth} levels"
        )
    counter[0] += 1
    if counter[0] > limits.max_nodes:
        raise InvalidTrigger(f"{path}: the trigger has more than {limits.max_nodes} parts")
    kind = spec.get("kind")
    allowed = _SPEC_KEYS.get(kind) if isinstance(kind, str) else None
    if allowed is None:
        shown = kind if isinstance(kind, str | None) else type(kind).__name__
        if isinstance(shown, str):
            shown = shown[:40]
        raise InvalidTrigger(
            f"{path}: unknown kind {shown!r} (expected interval, cron, date or compound)"
        )
    unknown = sorted(str(key)[:40] for key in set(spec) - allowed - {"kind"})
    if unknown:
        raise InvalidTrigger(f"{path}: unknown {kind} field(s): {', '.join(unknown[:5])}")
    try:
        if kind == "interval":
            return _interval_from_spec(spec, limits)
        if kind == "cron":
            if "expression" not in spec:
                raise InvalidTrigger("cron spec needs 'expression'")
            expression = spec["expression"]
            if not isinstance(expression, str):
                raise InvalidTrigger("cron expression must be a string")
            _text(expression, "cron expression", limits)
            return Cron(expression, _text(spec.get("tz", "UTC"), "cron tz", limits))
        if kind == "date":
            return _date_from_spec(spec, limits)
        children = spec.get("children")
        if not isinstance(children, list):
            raise InvalidTrigger("compound spec needs 'children', a list of trigger specs")
        if len(children) > limits.max_children:
            raise InvalidTrigger(
                f"compound has {len(children)} children (at most {limits.max_children})"
            )
        mode = spec.get("mode")
        if mode not in ("any", "all"):
            shown = mode[:40] if isinstance(mode, str) else mode
            raise InvalidTrigger(f"compound mode must be 'any' or 'all', got {shown!r}")
        return Compound(
            mode,
            tuple(
                _from_spec(child, f"{path}.children[{i}]", depth + 1, limits, counter)
                for i, child in enumerate(children)
            ),
            limits,
        )
    except InvalidTrigger as exc:
        message = str(exc)
        if message.startswith(path):
            raise
        raise type(exc)(f"{path}: {message}") from None


_SPEC_KEYS = {
    "interval": {"every", "jitter", "anchor", "seed"},
    "cron": {"expression", "tz"},
    "date": {"at", "tz"},
    "compound": {"mode", "children"},
}


def _interval_from_spec(spec: dict, limits: Limits) -> Interval:
    if "every" not in spec:
        raise InvalidTrigger("interval spec needs 'every' (seconds)")
    anchor = spec.get("anchor")
    return Interval(
        every=_seconds(spec["every"], "interval every", limits),
        jitter=_seconds(spec.get("jitter", 0), "interval jitter", limits),
        anchor=EPOCH if anchor is None else _parse_instant(anchor, "interval anchor", None, limits),
        seed=_text(spec.get("seed", ""), "interval seed", limits),
    )


def _date_from_spec(spec: dict, limits: Limits) -> Date:
    if "at" not in spec:
        raise InvalidTrigger("date spec needs 'at' (ISO-8601)")
    tz = spec.get("tz")
    if tz is not None:
        _text(tz, "date tz", limits)
    return Date(_parse_instant(spec["at"], "date 'at'", tz, limits))


def _parse_instant(
    value: object, what: str, tz: str | None, limits: Limits = DEFAULT_LIMITS
) -> datetime:
    """An ISO-8601 string with an offset, or a local time plus an IANA zone."""
    if not isinstance(value, str):
        raise InvalidTrigger(f"{what} must be an ISO-8601 string")
    _text(value, what, limits)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidTrigger(f"{what} '{value}' is not an ISO-8601 date and time") from None
    try:
        instant = _localized(parsed, what, value, tz)
        utc = to_utc(instant)  # a time whose UTC is before year 1 or after 9999 is refused here
    except OverflowError:
        raise InvalidTrigger(f"{what} '{value}' is out of range") from None
    if not SHOWN_RANGE[0] <= utc <= SHOWN_RANGE[1]:
        # Pages show it in the viewer's zone: a day from the ends it would overflow there.
        raise InvalidTrigger(f"{what} '{value}' is out of range (years 1 to 9999, a day in)")
    return instant


# The instants every zone can show: UTC offsets are under a day.
SHOWN_RANGE = (
    datetime.min.replace(tzinfo=UTC) + timedelta(days=1),
    datetime.max.replace(tzinfo=UTC) - timedelta(days=1),
)


def _localized(parsed: datetime, what: str, value: str, tz: str | None) -> datetime:
    if tz is not None:
        zone = get_zone(tz)
        if parsed.tzinfo is not None:
            return parsed.astimezone(zone)
        local = parsed.replace(tzinfo=zone)
        if is_imaginary(local):
            raise InvalidTrigger(
                f"{what} {value} does not exist in {tz} (skipped by daylight saving)"
            )
        return local
    if parsed.tzinfo is None:
        raise InvalidTrigger(f"{what} '{value}' needs a UTC offset (e.g. +01:00) or a time zone")
    return parsed


def instant_from_text(value: str, tz: str | None = None) -> datetime:
    """Parse an operator-supplied time: ISO-8601, with an offset or local to `tz`."""
    return _parse_instant(value, "time", tz)
