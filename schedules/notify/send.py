"""Hand one payload to the module of its channel's kind; returns the channel's answer."""

from __future__ import annotations

from typing import Any

from . import chat, email, webhook
from .targets import APPRISE, EMAIL, WEBHOOK, Target

SENDERS = {WEBHOOK: webhook.deliver, EMAIL: email.deliver, APPRISE: chat.deliver}


def deliver(target: Target, payload: dict[str, Any], *, timeout: float, delivery_id: str) -> str:
    """Raises DeliveryFailed with the channel's answer when it did not get through."""
    return SENDERS[target.kind](target, payload, timeout=timeout, delivery_id=delivery_id)
