"""The header's live count of open incidents, pushed to browsers over the channel layer."""

from __future__ import annotations

from ..layer import send_to_groups

INCIDENTS_GROUP = "incidents"


async def publish_count(count: int) -> None:
    """A hint for open pages; the database holds the truth, a lost message heals next time."""
    message = {"type": "incidents.count", "count": count}
    await send_to_groups([INCIDENTS_GROUP], message, what="incident count")
