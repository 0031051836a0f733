"""The alerting task of a scheduler process: sweeps and delivery, beside the tick loop.

It has its own asyncio task, its own threads for database work and for sends,
and a timeout on every send, so a slow SMTP server or a webhook that hangs
never delays a claim. Any number of processes run it: sweeps are idempotent
(incidents open once) and notifications are claimed once (notify/outbox.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from typing import Any

from django.db import connections

from ..alerts import checks
from ..alerts.live import publish_count
from ..conf import setting
from ..notify import outbox, send
from ..notify.errors import DeliveryFailed
from ..registry import Registry, registry
from .clock import Clock, SystemClock

logger = logging.getLogger(__name__)

MAX_BACKOFF = 30.0
SENDS_AT_ONCE = 4
COUNT_REFRESH = 30.0  # the count is pushed at least this often, so a lost message heals


class Alerting:
    def __init__(
        self, *, instance_id: str, clock: Clock | None = None, tasks: Registry = registry
    ) -> None:
        self.instance_id = instance_id
        self.clock = clock or SystemClock()
        self.tasks = tasks
        # Apart from the scheduler's own database thread: a slow sweep never delays a claim.
        self._db_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sillo-alerts")
        self._send_pool = ThreadPoolExecutor(
            max_workers=SENDS_AT_ONCE, thread_name_prefix="sillo-send"
        )
        self._sending: set[asyncio.Task] = set()
        self._last_check: datetime | None = None
        self._count: int | None = None
        self._count_at: datetime | None = None
        self._wake = asyncio.Event()

    async def db(self, fn: Callable[..., Any], **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._db_pool, partial(_closing_on_error, fn, kwargs))

    async def run_forever(self, stop: asyncio.Event) -> None:
        backoff = 1.0
        while not stop.is_set():
            try:
                await self.step()
                delay, backoff = setting("SILLO_NOTIFY_POLL"), 1.0
            except Exception:
                logger.exception("alerting step failed; retrying in %.0fs", backoff)
                delay, backoff = backoff, min(backoff * 2, MAX_BACKOFF)
            waiter = asyncio.ensure_future(self.clock.wait(delay, self._wake))
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            stopper.cancel()
        await self.shutdown()

    async def step(self) -> None:
        now = self.clock.now()
        every = setting("SILLO_ALERT_CHECK_INTERVAL")
        if self._last_check is None or (now - self._last_check).total_seconds() >= every:
            self._last_check = now
            for sweep in (checks.check_late, checks.check_stuck, checks.check_probes):
                try:
                    await self.db(sweep, now=now, tasks=self.tasks)
                except Exception:
                    logger.exception("alert sweep %s failed", sweep.__name__)
        await self._publish_count(now)
        room = SENDS_AT_ONCE - len(self._sending)
        if room <= 0:
            return
        for notification in await self.db(
            outbox.claim, now=now, instance_id=self.instance_id, limit=room
        ):
            task = asyncio.create_task(self.deliver(notification))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def wait_idle(self) -> None:
        """Wait until the sends started so far are recorded."""
        while self._sending:
            await asyncio.wait(list(self._sending))

    async def _publish_count(self, now: datetime) -> None:
        count = await self.db(checks.open_count)
        stale = self._count_at is None or (now - self._count_at).total_seconds() >= COUNT_REFRESH
        if count != self._count or stale:
            self._count, self._count_at = count, now
            await publish_count(count)

    async def deliver(self, notification) -> None:
        """Send one claimed notification; record sent, or failed (retried with backoff)."""
        timeout = setting("SILLO_NOTIFY_TIMEOUT")
        error = ""
        answer = ""
        final = False
        try:
            target = outbox.target_of(notification)
            if target is None:
                final = True  # a retry cannot bring the channel back
                raise DeliveryFailed("the channel was deleted")
            loop = asyncio.get_running_loop()
            call = partial(
                send.deliver,
                target,
                notification.payload,
                timeout=timeout,
                delivery_id=str(notification.pk),
            )
            # The send's own timeout bounds the I/O; this one bounds everything else.
            async with asyncio.timeout(timeout + 5):
                answer = await loop.run_in_executor(self._send_pool, call)
        except DeliveryFailed as exc:
            error = str(exc) or "delivery failed"
        except TimeoutError:
            error = f"no answer within {timeout + 5:g}s"
        except Exception as exc:
            logger.exception("notification %s could not be sent", notification.pk)
            error = f"{type(exc).__name__}: {exc}"
        now = self.clock.now()
        if error:
            status = await self.db(
                outbox.mark_failed,
                notification_id=notification.pk,
                instance_id=self.instance_id,
                error=error,
                now=now,
                final=final,
            )
            log = logger.error if status == "failed" else logger.warning
            log(
                "notification %s (%s) to %s %s: %s",
                notification.pk,
                notification.event,
                notification.channel_label,
                "failed" if status == "failed" else "will be retried",
                error,
            )
        else:
            await self.db(
                outbox.mark_sent,
                notification_id=notification.pk,
                instance_id=self.instance_id,
                answer=answer,
                now=now,
            )
            logger.info(
                "notification %s (%s) sent to %s",
                notification.pk,
                notification.event,
                notification.channel_label,
            )

    async def shutdown(self) -> None:
        if self._sending:
            await asyncio.wait(list(self._sending), timeout=setting("SILLO_NOTIFY_TIMEOUT") + 5)
        self._db_pool.submit(connections.close_all)
        self._db_pool.shutdown(wait=True)
        self._send_pool.shutdown(wait=False, cancel_futures=True)


def _closing_on_error(fn: Callable[..., Any], kwargs: dict) -> Any:
    try:
        return fn(**kwargs)
    except Exception:
        # A broken connection is reopened by the next query.
        connections["default"].close()
        raise
