"""Wake hints on the channel layer: the `scheduler` channel's consumer and its listener.

`runscheduler` runs a Channels background worker on SCHEDULER_CHANNEL in
the same event loop as its schedulers; a hint makes them look at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from channels.consumer import AsyncConsumer
from channels.layers import get_channel_layer
from channels.routing import ChannelNameRouter
from channels.worker import Worker

from ..wake import SCHEDULER_CHANNEL

if TYPE_CHECKING:
    from .engine import Scheduler

logger = logging.getLogger(__name__)

MAX_LISTEN_BACKOFF = 30.0

# Schedulers running in this process: the ones a hint wakes.
_local: set[Scheduler] = set()


def register(scheduler: Scheduler) -> None:
    _local.add(scheduler)


def unregister(scheduler: Scheduler) -> None:
    _local.discard(scheduler)


def wake_local() -> None:
    for scheduler in list(_local):
        scheduler.hint()


class SchedulerWakeConsumer(AsyncConsumer):
    """Wake hints ("scheduler.wake") make the local schedulers look at once."""

    async def scheduler_wake(self, message: dict) -> None:
        wake_local()


async def listen_for_hints(stop: asyncio.Event) -> None:
    """The Channels background worker on `scheduler`; restarts if the layer fails."""
    layer = get_channel_layer()
    if layer is None:
        logger.warning("no channel layer: wake hints are off, resync interval applies")
        return
    backoff = 1.0
    while not stop.is_set():
        # Its own router, not the host's ASGI_APPLICATION: a host's asgi.py need
        # not route the scheduler channel for runscheduler to hear hints.
        router = ChannelNameRouter({SCHEDULER_CHANNEL: SchedulerWakeConsumer.as_asgi()})
        worker = Worker(router, [SCHEDULER_CHANNEL], layer)
        try:
            await worker.handle()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.warning("channel layer failed (%s); listening again in %.0fs", exc, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_LISTEN_BACKOFF)
