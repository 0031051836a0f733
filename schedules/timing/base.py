"""What every trigger offers: fire times after an instant, a spec and a description."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import islice

from .errors import InvalidTrigger

MAX_PREVIEW = 1000


class Trigger(ABC):
    """A rule that says when a schedule is due. Instances are immutable."""

    @abstractmethod
    def iter_fires(self, after: datetime) -> Iterator[datetime]:
        """Slots strictly after `after` (aware), earliest first, as aware datetimes."""

    @abstractmethod
    def to_spec(self) -> dict:
        """A JSON-ready dict that `trigger_from_spec` turns back into an equal trigger."""

    @abstractmethod
    def describe(self) -> str:
        """Human text for operators."""

    def next_fire(self, after: datetime) -> datetime | None:
        """The first slot strictly after `after`, or None if there is none."""
        return next(self.iter_fires(after), None)

    def slots_between(
        self, first: datetime, until: datetime, *, keep: int, cap: int = 10_000
    ) -> tuple[int, list[datetime]]:
        """(how many slots fall in [first, until], up to `cap`; the last `keep` of them).

        Walks the slots; triggers that can count them directly (Interval) override it.
        """
        count = 0
        latest: deque[datetime] = deque(maxlen=keep)
        for slot in self.iter_fires(first - timedelta(microseconds=1)):
            if slot > until or count >= cap:
                break
            count += 1
            latest.append(slot)
        return count, list(latest)

    def preview(self, n: int, after: datetime) -> list[datetime]:
        """The next `n` slots after `after` (fewer if the trigger runs out)."""
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_PREVIEW:
            raise InvalidTrigger(f"preview count must be a whole number from 1 to {MAX_PREVIEW}")
        return list(islice(self.iter_fires(after), n))
