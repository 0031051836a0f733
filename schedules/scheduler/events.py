"""Run events for live views, sent to channel layer groups.

Events are hints for browsers; the database holds the truth. A missing or
broken channel layer is logged and never stops scheduling.
"""

from __future__ import annotations

import asyncio
import logging

from channels.layers import get_channel_layer

from ..models import Run
from ..presenters import run_data

logger = logging.getLogger(__name__)

ALL_RUNS_GROUP = "runs"
PUBLISH_TIMEOUT = 2.0


def schedule_group(schedule_id: int) -> str:
    return f"runs.schedule.{schedule_id}"


def run_payload(run: Run) -> dict:
    """What a browser needs of a run event (the result stays in the database)."""
    return {**run_data(run, with_result=False), "schedule_id": run.schedule_id}


async def publish_run(run: Run) -> None:
    """Send a run event to the all-runs group and the schedule's group."""
    layer = get_channel_layer()
    if layer is None:
        return
    event = {"type": "run.event", "run": run_payload(run)}
    groups = [ALL_RUNS_GROUP]
    if run.schedule_id is not None:
        groups.append(schedule_group(run.schedule_id))
    try:
        async with asyncio.timeout(PUBLISH_TIMEOUT):
            for group in groups:
                await layer.group_send(group, event)
    except Exception as exc:
        logger.warning("run event for run %s not published: %s", run.pk, exc)
