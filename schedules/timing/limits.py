"""Bounds on what a trigger may cost: its size, its numbers and its next-fire searches.

A spec comes from anyone who may preview one, so every parse and every search
is bounded. `Limits` travels with the parsed trigger (callers pass it to
`trigger_from_spec`; the app builds it from settings), and a `Meter` counts the
work of one search: every child asked for a slot costs one step, and a search
that runs out of steps is refused with that reason instead of running on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .errors import InvalidTrigger


@dataclass(frozen=True)
class Limits:
    """How large a trigger may be, and how much work one next-fire search may do."""

    max_depth: int = 8  # compound levels
    max_children: int = 20  # children of one compound
    max_nodes: int = 50  # triggers in one spec, compounds included
    max_text: int = 256  # characters of an expression, zone, seed or date
    max_seconds: float = 100 * 366 * 86400  # interval every/jitter (about a century)
    max_spec_bytes: int = 64 * 1024  # a spec given as JSON text
    search_budget: int = 2_000  # steps of one next-fire search (one step: one child slot)


DEFAULT_LIMITS = Limits()


class BudgetExceeded(InvalidTrigger):
    """A next-fire search that could not finish within its budget."""


class Meter:
    """The steps left to one search (shared by every compound it reaches)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.left = budget

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise BudgetExceeded(
                f"compound 'all' cannot be decided within the search budget of {self.budget} "
                "steps: its children fire together rarely or never (simplify the trigger)"
            )


_METER: ContextVar[Meter | None] = ContextVar("sillo_timing_meter", default=None)


@contextmanager
def metered(budget: int) -> Iterator[Meter]:
    """Count the work inside the block against `budget`, unless an outer block already does."""
    outer = _METER.get()
    if outer is not None:
        yield outer
        return
    meter = Meter(budget)
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def current_meter() -> Meter | None:
    return _METER.get()
