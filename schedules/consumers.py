"""Channel consumers. `SchedulerWakeConsumer` listens on the `scheduler` channel."""

from __future__ import annotations

from channels.consumer import AsyncConsumer


class SchedulerWakeConsumer(AsyncConsumer):
    """Wake hints ("scheduler.wake") make the local schedulers look at once."""

    async def scheduler_wake(self, message: dict) -> None:
        from .scheduler.engine import wake_local

        wake_local()
