"""The channel layer as the hint path it is: every send is bounded in time and never raises.

Live pages and wake-ups are hints; the database holds the truth. So a broken layer
(Redis refusing) or a hung one (Redis stopped, a network dropping packets: a send then
waits for redis-py's 5 s read timeout, or for ever on a layer without one) costs a lost
hint and at most SEND_TIMEOUT, never a stuck scheduler, request or command.

After a send times out, this process sends nothing for QUIET seconds: a bulk action
over a hundred schedules would otherwise wait SEND_TIMEOUT for each of its hints.
A layer that refuses at once (Redis down) costs nothing to keep trying, but its
refusals are logged once every REPORT_EVERY seconds with how many hints were lost
meanwhile: one a run's every event and group made three warnings a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from asgiref.sync import async_to_sync
from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer, get_channel_layer

logger = logging.getLogger(__name__)

SEND_TIMEOUT = 2.0
QUIET = 10.0
REPORT_EVERY = 30.0  # seconds between two warnings of refused sends

_quiet_until = 0.0  # _now() before which sends are skipped (a hung layer)
_now = time.monotonic


class _Refusals:
    """Refused sends since the last warning of them."""

    def __init__(self) -> None:
        self.reported_at: float | None = None
        self.since = 0

    def report(self, lost: str, why: str) -> None:
        now = _now()
        if self.reported_at is not None and now - self.reported_at < REPORT_EVERY:
            self.since += 1
            logger.debug("%s: %s", lost, why)
            return
        more = f" (and {self.since} more lost since the last warning)" if self.since else ""
        self.reported_at, self.since = now, 0
        logger.warning("%s: %s%s", lost, why, more)


refusals = _Refusals()


def listened(groups: Iterable[str]) -> list[str]:
    """Of these groups, the ones a send may reach: all of them, except on the in-process
    layer, which knows the groups that have no member (no page open on them).

    A send to those is work for nobody, and not little: in a burst of a thousand
    runs with no page open, the in-process layer's sends took a fifth of the
    scheduler loop's time.
    """
    layer = get_channel_layer()
    if isinstance(layer, InMemoryChannelLayer):
        return [group for group in groups if group in layer.groups]
    return list(groups)


async def send_to_groups(groups: Iterable[str], message: dict[str, Any], *, what: str) -> None:
    """Send `message` to each group; `what` names it in the warning if it is lost."""
    groups = listened(groups)
    if not groups:
        return

    async def send(layer: Any) -> None:
        for group in groups:
            await layer.group_send(group, message)

    await _bounded(send, f"{what} not published")


async def send_to_each_group(messages: Mapping[str, dict[str, Any]], *, what: str) -> None:
    """Send each group its own message, each send within its own time bound (a batch
    may go to hundreds of groups: a slow layer must not look hung)."""
    for group in listened(messages):
        message = messages[group]

        async def send(layer: Any, group: str = group, message: dict = message) -> None:
            await layer.group_send(group, message)

        await _bounded(send, f"{what} not published to {group}")


async def send_to_channel(channel: str, message: dict[str, Any], *, what: str) -> None:
    """Send `message` to one channel; a full channel already holds enough of them."""

    async def send(layer: Any) -> None:
        with contextlib.suppress(ChannelFull):
            await layer.send(channel, message)

    await _bounded(send, f"{what} not sent")


def send_to_groups_from_sync(groups: Iterable[str], message: dict[str, Any], *, what: str) -> None:
    _from_sync(send_to_groups, groups, message, what=what)


def send_to_channel_from_sync(channel: str, message: dict[str, Any], *, what: str) -> None:
    _from_sync(send_to_channel, channel, message, what=what)


async def _bounded(send: Callable[[Any], Awaitable[None]], lost: str) -> None:
    global _quiet_until
    if _now() < _quiet_until:
        logger.debug("%s: the channel layer hung a moment ago", lost)
        return
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        async with asyncio.timeout(SEND_TIMEOUT):
            await send(layer)
    except TimeoutError:
        _quiet_until = _now() + QUIET
        logger.warning("%s: the channel layer did not answer in %.0f s; no hint is sent "
                       "for %.0f s", lost, SEND_TIMEOUT, QUIET)  # fmt: skip
    except Exception as exc:
        refusals.report(lost, str(exc) or type(exc).__name__)
    else:
        refusals.reported_at = None  # the layer answers: the next refusal is news


def _from_sync(send: Callable[..., Awaitable[None]], *args: Any, what: str) -> None:
    try:
        async_to_sync(send)(*args, what=what)
    except Exception as exc:  # e.g. called from a thread running an event loop
        logger.warning("%s not sent: %s", what, str(exc) or type(exc).__name__)
