"""Wake hints: telling schedulers to look at the database now.

Services send a hint after queuing a run or changing a schedule; each
`runscheduler` listens on SCHEDULER_CHANNEL. A lost hint costs at most one
resync interval: the database is the truth.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

SCHEDULER_CHANNEL = "scheduler"
WAKE_MESSAGE = {"type": "scheduler.wake"}


def wake_schedulers() -> None:
    """Hint a scheduler to look now."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.send)(SCHEDULER_CHANNEL, WAKE_MESSAGE)
    except ChannelFull:
        pass  # wake-ups are already waiting for a scheduler
    except Exception as exc:  # the channel layer is a hint path; the database is the truth
        logger.warning("could not wake schedulers: %s", exc)
