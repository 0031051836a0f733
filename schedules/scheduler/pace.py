"""How many runs the scheduler starts ahead of its free workers.

Runs started ahead wait in the scheduler for a worker (claimed, shown
running; their timeout starts when a worker takes them), so a worker that
frees up takes the next run with no database round trip. Short runs need many
ahead to keep the workers busy; long runs need few, and more would only show
runs as running that wait. So the backlog follows the workers' pace: about
what they finished in the last half second, at most SILLO_WORKER_BACKLOG and
at least one per worker (within that limit).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

WINDOW = 0.25  # seconds of finished runs that measure the pace
AHEAD = 0.5  # seconds of work started ahead at that pace


class Backlog:
    def __init__(
        self, *, limit: int, floor: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        # Real time, not the scheduler's clock: the pace is the worker processes'.
        self.limit = limit
        self.floor = min(floor, limit)
        self._clock = clock
        self._finished: deque[float] = deque()

    def finished(self) -> None:
        """A run in a worker ended."""
        self._finished.append(self._clock())

    def size(self) -> int:
        since = self._clock() - WINDOW
        while self._finished and self._finished[0] < since:
            self._finished.popleft()
        pace = len(self._finished) / WINDOW
        return max(self.floor, min(self.limit, int(pace * AHEAD)))
