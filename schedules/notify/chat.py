"""Chat channels (Slack, Teams, Discord, Telegram, ntfy, Pushover, ...) through apprise."""

from __future__ import annotations

from typing import Any

import apprise

from .errors import DeliveryFailed
from .payload import body_of, title_of
from .targets import Target

FAILURE = apprise.NotifyType.FAILURE
KINDS = {
    "failed": FAILURE,
    "stuck": apprise.NotifyType.WARNING,
    "late": apprise.NotifyType.WARNING,
    "auto_paused": FAILURE,
    "recovered": apprise.NotifyType.SUCCESS,
}


def deliver(target: Target, payload: dict[str, Any], *, timeout: float, delivery_id: str) -> str:
    client = apprise.Apprise()
    if not client.add(target.url):
        raise DeliveryFailed("apprise does not understand this URL")
    result = client.notify(
        body=body_of(payload),
        title=title_of(payload),
        notify_type=KINDS.get(payload["event"], apprise.NotifyType.INFO),
        timeout=timeout,
    )
    logs = "; ".join(entry.message for entry in result.logs)
    if not result:
        raise DeliveryFailed(logs or "apprise reported a failure")
    return logs or "sent"
