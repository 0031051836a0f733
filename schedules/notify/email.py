"""Email channel: through Django's mailers (`MAILERS["default"]`, or SILLO_NOTIFY_MAILER)."""

from __future__ import annotations

import smtplib
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, mailers

from ..conf import setting
from .errors import DeliveryFailed
from .payload import body_of, title_of
from .targets import Target, email_addresses


def deliver(target: Target, payload: dict[str, Any], *, timeout: float, delivery_id: str) -> str:
    to = email_addresses(target.url)
    message = EmailMessage(
        subject=f"[sillo] {title_of(payload)}",
        body=body_of(payload),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=to,
        headers={"X-Sillo-Event": payload["event"], "X-Sillo-Delivery": delivery_id},
    )
    try:
        sent = mailers[setting("SILLO_NOTIFY_MAILER")].send_messages([message])
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None
    if not sent:
        raise DeliveryFailed("the mail backend sent nothing")
    return f"sent to {', '.join(to)}"
