"""The header's live count of open incidents, pushed to browsers over the channel layer."""

from __future__ import annotations

import asyncio
import logging

from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

INCIDENTS_GROUP = "incidents"
PUBLISH_TIMEOUT = 2.0


async def publish_count(count: int) -> None:
    """A hint for open pages; the database holds the truth, a lost message heals next time."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async with asyncio.timeout(PUBLISH_TIMEOUT):
            await layer.group_send(INCIDENTS_GROUP, {"type": "incidents.count", "count": count})
    except Exception as exc:
        logger.warning("incident count not published: %s", exc)
