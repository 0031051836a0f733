"""What every trigger offers: fire times after an instant, a spec and a description."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import islice, takewhile

from .errors import InvalidTrigger
from .limits import DEFAULT_LIMITS, metered

MAX_PREVIEW = 1000
ONE_MICROSECOND = timedelta(microseconds=1)


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

        Walks the slots; triggers that can count them directly (Interval, Cron)
        override it. The slots kept are the latest before `until` even when the
        count stops at the cap.
        """
        count = 0
        latest: deque[datetime] = deque(maxlen=keep)
        for slot in self.iter_fires(first - ONE_MICROSECOND):
            if slot > until:
                break
            if count >= cap:  # more lie ahead: the latest are near `until`, not here
                return count, self.latest_slots(first, until, keep)
            count += 1
            latest.append(slot)
        return count, list(latest)

    def latest_slots(self, first: datetime, until: datetime, keep: int) -> list[datetime]:
        """The last `keep` slots in [first, until], walked from the shortest window
        before `until` (an hour, doubled) that holds `keep` of them, or from `first`."""
        low, window = first, timedelta(hours=1)
        while window < until - first:
            if self._holds(until - window, until, keep):
                low = until - window
                break
            window *= 2
        found: deque[datetime] = deque(maxlen=keep)
        for slot in self.iter_fires(low - ONE_MICROSECOND):
            if slot > until:
                break
            found.append(slot)
        return list(found)

    def _holds(self, low: datetime, until: datetime, keep: int) -> bool:
        """Whether [low, until] holds at least `keep` slots (walked; Cron counts them)."""
        within = takewhile(lambda slot: slot <= until, self.iter_fires(low - ONE_MICROSECOND))
        return sum(1 for _ in islice(within, keep)) >= keep

    def preview(self, n: int, after: datetime) -> list[datetime]:
        """The next `n` slots after `after` (fewer if the trigger runs out)."""
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_PREVIEW:
            raise InvalidTrigger(f"preview count must be a whole number from 1 to {MAX_PREVIEW}")
        # One search budget for the whole preview, however the trigger nests.
        limits = getattr(self, "limits", DEFAULT_LIMITS)
        with metered(limits.search_budget):
            return list(islice(self.iter_fires(after), n))
