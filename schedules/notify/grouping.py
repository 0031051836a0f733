"""Summaries: one notification for many of one event waiting for one channel.

After an outage every schedule opens its own late incident; after a bad deploy
every task its own failing one. Each incident keeps its notification (written
with its cause, in the outbox), but a channel with `SILLO_NOTIFY_GROUP_AT` or
more of one event waiting gets one summary that carries them all, and for
`SILLO_NOTIFY_GROUP_INTERVAL` after it that event waits for the channel's next
summary, so a storm that goes on makes one message per interval, not one per
schedule. The deliverer groups when it claims (outbox.claim): a notification
moves from pending into one summary with a conditional UPDATE, so with several
deliverers each is carried once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Q

from ..alerts.models import Notification, NotificationStatus
from ..conf import setting
from . import payload

# The members a summary names, in its text and its `group.schedules`.
NAMED = 20

Key = tuple[int | None, str, str]  # (channel id, SILLO_NOTIFY URL, event)


def key_of(row: dict[str, Any]) -> Key:
    return (row["channel_id"], row["env_url"], row["event"])


def matching(key: Key) -> Q:
    channel_id, env_url, event = key
    return Q(channel_id=channel_id, env_url=env_url, event=event)


def groupable(now: datetime) -> Any:
    """Single notifications whose time has come (a summary is never grouped again)."""
    return Notification.objects.filter(
        status=NotificationStatus.PENDING, next_attempt_at__lte=now, size=0
    )


def held(now: datetime) -> set[Key]:
    """The channels' events a summary went to within the interval: they wait for the next."""
    since = now - timedelta(seconds=setting("SILLO_NOTIFY_GROUP_INTERVAL"))
    recent = Notification.objects.filter(size__gt=0, created_at__gt=since).order_by()
    return {key_of(row) for row in recent.values("channel_id", "env_url", "event").distinct()}


def gather(*, now: datetime, instance_id: str, limit: int) -> tuple[list[Notification], set[Key]]:
    """Group what waits: (summaries won, claimed for sending now; the keys held back).

    With grouping off (`SILLO_NOTIFY_GROUP_AT` 0) nothing is grouped or held.
    """
    at_least = setting("SILLO_NOTIFY_GROUP_AT")
    if not at_least:
        return [], set()
    holding = held(now)
    crowds = (
        groupable(now)
        .values("channel_id", "env_url", "event")
        .annotate(waiting=Count("pk"))
        .filter(waiting__gte=at_least)
        .order_by("event", "channel_id", "env_url")
    )
    summaries = []
    for row in crowds:
        key = key_of(row)
        if key in holding or len(summaries) >= limit:
            continue
        summary = summarise(key, now=now, instance_id=instance_id)
        if summary is not None:
            summaries.append(summary)
            holding.add(key)
    return summaries, holding


def summarise(key: Key, *, now: datetime, instance_id: str) -> Notification | None:
    """Move the key's waiting notifications into a new summary, claimed by this process;
    None if another deliverer took them first."""
    channel_id, env_url, event = key
    with transaction.atomic():
        summary = Notification.objects.create(
            channel_id=channel_id,
            env_url=env_url,
            channel_label="",
            event=event,
            payload={},
            status=NotificationStatus.SENDING,
            claimed_by=instance_id,
            claimed_at=now,
            attempts=1,
            created_at=now,
            next_attempt_at=now,
        )
        size = (
            groupable(now)
            .filter(matching(key))
            .update(status=NotificationStatus.GROUPED, group=summary)
        )
        if not size:
            summary.delete()
            return None
        named = summary.members.order_by("created_at", "pk").values_list("payload", flat=True)
        summary.size = size
        # The channel's name as its latest notification has it (it may have been renamed).
        summary.channel_label = (
            summary.members.order_by("-pk").values_list("channel_label", flat=True).first()
        )
        summary.payload = payload.summary(
            event=event, members=list(named[:NAMED]), size=size, at=now
        )
        summary.save(update_fields=["size", "channel_label", "payload"])
    return summary
