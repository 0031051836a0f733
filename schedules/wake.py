"""Wake hints: telling schedulers to look at the database now.

Services send a hint after queuing a run or changing a schedule; each
`runscheduler` listens on SCHEDULER_CHANNEL. A lost hint costs at most one
resync interval: the database is the truth.
"""

from __future__ import annotations

from .layer import send_to_channel_from_sync

SCHEDULER_CHANNEL = "scheduler"
WAKE_MESSAGE = {"type": "scheduler.wake"}


def wake_schedulers() -> None:
    """Hint a scheduler to look now (a full channel: wake-ups are already waiting)."""
    send_to_channel_from_sync(SCHEDULER_CHANNEL, WAKE_MESSAGE, what="wake-up for the schedulers")
