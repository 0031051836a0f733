"""JSON webhook channel: POST the payload, signed with HMAC-SHA256 when a secret is set.

Headers: `X-Sillo-Event`, `X-Sillo-Delivery` (the notification's id: the same
on every retry, so a receiver can drop a repeat), and with a secret
`X-Sillo-Signature: sha256=<hex HMAC of the body>`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import requests

from .errors import DeliveryFailed
from .targets import Target

ANSWER_MAX_CHARS = 500


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver(target: Target, payload: dict[str, Any], *, timeout: float, delivery_id: str) -> str:
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "sillo-dash",
        "X-Sillo-Event": payload["event"],
        "X-Sillo-Delivery": delivery_id,
    }
    if target.secret:
        headers["X-Sillo-Signature"] = signature(target.secret, body)
    try:
        response = requests.post(
            target.url, data=body, headers=headers, timeout=timeout, allow_redirects=False
        )
    except requests.RequestException as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None
    answer = f"HTTP {response.status_code} {response.text[:ANSWER_MAX_CHARS]}".strip()
    if not 200 <= response.status_code < 300:
        raise DeliveryFailed(answer)
    return answer
