"""Interval, one-shot Date and Compound triggers, and the JSON spec of all kinds."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from heapq import merge

from .base import Trigger
from .cron import Cron
from .describe import describe_duration
from .errors import InvalidTrigger
from .zones import get_zone, is_imaginary, require_aware, to_utc, zone_name

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_MICROSECOND = timedelta(microseconds=1)
# Compound(all) gives up after this many rounds of "advance the laggards";
# each round moves past at least one child slot.
ALL_SEARCH_ROUNDS = 10_000
MAX_DEPTH = 64
MAX_NODES = 1_000


def _seconds(value: object, what: str) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidTrigger(f"{what} must be a number of seconds")
    try:
        return timedelta(seconds=value)
    except OverflowError:
        raise InvalidTrigger(f"{what} {value} is too large") from None


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

    def iter_fires(self, after: datetime) -> Iterator[datetime]:
        if to_utc(self.at) > to_utc(require_aware(after, "after")):
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
        if _depth(self) > MAX_DEPTH:
            raise InvalidTrigger(f"compound triggers nest deeper than {MAX_DEPTH} levels")
        if _size(self) > MAX_NODES:
            raise InvalidTrigger(f"compound trigger has more than {MAX_NODES} parts")
        if self.mode == "all" and _next_common(children, EPOCH) is None:
            raise InvalidTrigger(
                "compound 'all' never fires: its children have no instant in common "
                f"within {ALL_SEARCH_ROUNDS} candidate slots"
            )

    def iter_fires(self, after: datetime) -> Iterator[datetime]:
        require_aware(after, "after")
        if self.mode == "any":
            streams = [child.iter_fires(after) for child in self.children]
            last = None
            for instant in merge(*streams, key=to_utc):
                if last is None or to_utc(instant) != last:
                    last = to_utc(instant)
                    yield instant
            return
        while (instant := _next_common(self.children, after)) is not None:
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


def _next_common(children: tuple[Trigger, ...], after: datetime) -> datetime | None:
    """The earliest instant after `after` at which every child fires, if found."""
    lower = after
    for _ in range(ALL_SEARCH_ROUNDS):
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
    return None


# ---------------------------------------------------------------- specs


def trigger_from_spec(spec: dict | str) -> Trigger:
    """Build a trigger from its JSON spec (a dict, or a JSON string)."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as exc:
            raise InvalidTrigger(f"trigger spec is not valid JSON: {exc.msg}") from None
    return _from_spec(spec, "trigger", 0)


def _from_spec(spec: object, path: str, depth: int) -> Trigger:
    if not isinstance(spec, dict):
        raise InvalidTrigger(f"{path}: a trigger spec must be a JSON object")
    if depth > MAX_DEPTH:
        raise InvalidTrigger(f"{path}: compound triggers nest deeper than {MAX_DEPTH} levels")
    kind = spec.get("kind")
    allowed = _SPEC_KEYS.get(kind)
    if allowed is None:
        raise InvalidTrigger(
            f"{path}: unknown kind {kind!r} (expected interval, cron, date or compound)"
        )
    unknown = sorted(set(spec) - allowed - {"kind"})
    if unknown:
        raise InvalidTrigger(f"{path}: unknown {kind} field(s): {', '.join(unknown)}")
    try:
        if kind == "interval":
            return _interval_from_spec(spec, path)
        if kind == "cron":
            if "expression" not in spec:
                raise InvalidTrigger("cron spec needs 'expression'")
            return Cron(spec["expression"], spec.get("tz", "UTC"))
        if kind == "date":
            return _date_from_spec(spec)
        children = spec.get("children")
        if not isinstance(children, list):
            raise InvalidTrigger("compound spec needs 'children', a list of trigger specs")
        return Compound(
            spec.get("mode"),
            tuple(
                _from_spec(child, f"{path}.children[{i}]", depth + 1)
                for i, child in enumerate(children)
            ),
        )
    except InvalidTrigger as exc:
        message = str(exc)
        if message.startswith(path):
            raise
        raise InvalidTrigger(f"{path}: {message}") from None


_SPEC_KEYS = {
    "interval": {"every", "jitter", "anchor", "seed"},
    "cron": {"expression", "tz"},
    "date": {"at", "tz"},
    "compound": {"mode", "children"},
}


def _interval_from_spec(spec: dict, path: str) -> Interval:
    if "every" not in spec:
        raise InvalidTrigger("interval spec needs 'every' (seconds)")
    anchor = spec.get("anchor")
    return Interval(
        every=_seconds(spec["every"], "interval every"),
        jitter=_seconds(spec.get("jitter", 0), "interval jitter"),
        anchor=EPOCH if anchor is None else _parse_instant(anchor, "interval anchor", None),
        seed=spec.get("seed", ""),
    )


def _date_from_spec(spec: dict) -> Date:
    if "at" not in spec:
        raise InvalidTrigger("date spec needs 'at' (ISO-8601)")
    tz = spec.get("tz")
    return Date(_parse_instant(spec["at"], "date 'at'", tz))


def _parse_instant(value: object, what: str, tz: str | None) -> datetime:
    """An ISO-8601 string with an offset, or a local time plus an IANA zone."""
    if not isinstance(value, str):
        raise InvalidTrigger(f"{what} must be an ISO-8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidTrigger(f"{what} '{value}' is not an ISO-8601 date and time") from None
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
