"""The channel layer as the hint path it is: every send is bounded in time and never raises.

Live pages and wake-ups are hints; the database holds the truth. So a broken layer
(Redis refusing) or a hung one (Redis stopped, a network dropping packets: a send then
waits for ever) costs a lost hint and at most SEND_TIMEOUT, never a stuck scheduler,
request or command.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

SEND_TIMEOUT = 2.0


async def send_to_groups(groups: Iterable[str], message: dict[str, Any], *, what: str) -> None:
    """Send `message` to each group; `what` names it in the warning if it is lost."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async with asyncio.timeout(SEND_TIMEOUT):
            for group in groups:
                await layer.group_send(group, message)
    except Exception as exc:
        logger.warning("%s not published: %s", what, str(exc) or type(exc).__name__)


async def send_to_channel(channel: str, message: dict[str, Any], *, what: str) -> None:
    """Send `message` to one channel; a full channel already holds enough of them."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async with asyncio.timeout(SEND_TIMEOUT):
            await layer.send(channel, message)
    except ChannelFull:
        pass
    except Exception as exc:
        logger.warning("%s not sent: %s", what, str(exc) or type(exc).__name__)


def send_to_groups_from_sync(groups: Iterable[str], message: dict[str, Any], *, what: str) -> None:
    async_to_sync(send_to_groups)(groups, message, what=what)


def send_to_channel_from_sync(channel: str, message: dict[str, Any], *, what: str) -> None:
    async_to_sync(send_to_channel)(channel, message, what=what)
