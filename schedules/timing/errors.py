"""The one exception type the timing engine raises for bad input."""

from __future__ import annotations


class InvalidTrigger(ValueError):
    """A trigger, expression, spec or argument that cannot be used.

    The message names the field and the problem, and is meant to be shown to
    an operator as it is ("day-of-week 8 is out of range 0-7").
    """
