"""The outbox: notifications written with the outcome that caused them, claimed once, retried.

Notifications are written inside the caller's transaction (`notifications`
builds them; alerts/record.py writes them), so a notification exists if and
only if its incident event does. A deliverer claims a pending notification
with a conditional UPDATE whose row count says who won (as runs are claimed),
so each goes out once across processes; a claim whose deliverer died is
retried after SILLO_NOTIFY_LEASE.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import F, Q

from ..alerts.models import Channel, Incident, Notification, NotificationStatus
from ..conf import setting
from . import grouping
from .targets import InvalidChannel, Target, env_targets, parse

PENDING, SENDING = NotificationStatus.PENDING, NotificationStatus.SENDING


def targets() -> list[Target]:
    """Every channel a notification goes to: enabled dashboard channels, then SILLO_NOTIFY."""
    found = []
    for channel in Channel.objects.filter(enabled=True):
        try:
            found.append(channel_target(channel))
        except InvalidChannel:
            continue  # saved before a validation rule changed; the channels page flags it
    return found + env_targets()


def channel_target(channel: Channel) -> Target:
    return parse(channel.url, secret=channel.secret, label=channel.name, channel_id=channel.pk)


def notifications(
    *,
    incident: Incident | None,
    event: str,
    payload: dict[str, Any],
    now: datetime,
    targets: list[Target],
) -> list[Notification]:
    """The pending notifications of one event, one per target, unsaved: the caller
    writes them inside the transaction of what caused them (alerts/record.py)."""
    return [
        Notification(
            incident=incident,
            channel_id=target.channel_id,
            env_url="" if target.channel_id else target.with_secret,
            channel_label=target.label[:200],
            event=event,
            payload=payload,
            created_at=now,
            next_attempt_at=now,
        )
        for target in targets
    ]


def target_of(notification: Notification) -> Target | None:
    if notification.channel_id is None:
        if not notification.env_url:
            return None
        return parse(notification.env_url, label=notification.channel_label)
    channel = notification.channel
    return None if channel is None else channel_target(channel)


def claim(*, now: datetime, instance_id: str, limit: int) -> list[Notification]:
    """Pending notifications whose time has come, each won by one process: summaries of
    crowds first (grouping.py), then single ones of the events no summary holds back."""
    lease = now - timedelta(seconds=setting("SILLO_NOTIFY_LEASE"))
    # A deliverer that died mid-send: its claim expires and the notification is retried.
    # Read first: on SQLite an UPDATE takes the write lock even when it matches nothing.
    expired = Notification.objects.filter(status=SENDING, claimed_at__lt=lease)
    if expired.exists():
        expired.update(status=PENDING)
    summaries, held = grouping.gather(now=now, instance_id=instance_id, limit=limit)
    pending = Notification.objects.filter(status=PENDING, next_attempt_at__lte=now)
    for key in held:
        # A summary's own retries are not held back: only what waits to be grouped.
        pending = pending.exclude(grouping.matching(key) & Q(size=0))
    ids = list(
        pending.order_by("next_attempt_at", "pk").values_list("pk", flat=True)[
            : limit - len(summaries)
        ]
    )
    won = [summary.pk for summary in summaries]
    for pk in ids:
        mine = Notification.objects.filter(pk=pk, status=PENDING).update(
            status=SENDING, claimed_by=instance_id, claimed_at=now, attempts=F("attempts") + 1
        )
        if mine == 1:
            won.append(pk)
    return list(Notification.objects.filter(pk__in=won).select_related("channel").order_by("pk"))


def mark_sent(*, notification_id: int, instance_id: str, answer: str, now: datetime) -> None:
    Notification.objects.filter(pk=notification_id, status=SENDING, claimed_by=instance_id).update(
        status=NotificationStatus.SENT, sent_at=now, answer=answer[:2000], last_error=""
    )


def mark_failed(
    *, notification_id: int, instance_id: str, error: str, now: datetime, final: bool = False
) -> str:
    """Retry with backoff, or give up after SILLO_NOTIFY_MAX_ATTEMPTS (or at once when
    `final`: nothing a retry could change). Returns the new status."""
    notification = Notification.objects.filter(
        pk=notification_id, status=SENDING, claimed_by=instance_id
    ).first()
    if notification is None:
        return ""
    if final or notification.attempts >= setting("SILLO_NOTIFY_MAX_ATTEMPTS"):
        status, next_at = NotificationStatus.FAILED, notification.next_attempt_at
    else:
        delay = setting("SILLO_NOTIFY_RETRY_DELAY") * 2 ** (notification.attempts - 1)
        status = PENDING
        next_at = now + timedelta(seconds=min(delay, setting("SILLO_NOTIFY_MAX_RETRY_DELAY")))
    Notification.objects.filter(pk=notification_id, status=SENDING).update(
        status=status, next_attempt_at=next_at, last_error=error[:2000]
    )
    return status


def next_attempt_at() -> datetime | None:
    return (
        Notification.objects.filter(status=PENDING)
        .order_by("next_attempt_at")
        .values_list("next_attempt_at", flat=True)
        .first()
    )
