"""API tokens: issue one (shown once), revoke it, and find the user a token stands for.

A token reads `sdk_<prefix>_<secret>`: the 8-character prefix is stored in the
clear so a request finds its row by an indexed lookup and the owner recognises
it in the list; the whole token is stored only as its SHA-256. A random
256-bit secret needs no slow hash (nothing to brute-force), and the digests
are compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from .models import ApiToken

SCHEME = "sdk_"
PREFIX_LENGTH = 8
MALFORMED = (
    f"malformed token: API tokens are '{SCHEME}', {PREFIX_LENGTH} hexadecimal digits, '_' "
    "and the secret, as the API tokens page shows them once"
)
# A token's last use is written at most this often, so reads stay reads.
LAST_USED_RESOLUTION = timedelta(seconds=60)


class TokenRejected(ValueError):
    """A bearer token that is malformed, unknown, revoked or expired (the message says which)."""


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # the whole token text: shown once, never stored


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def token_issue(
    *, user: AbstractBaseUser, name: str, expires_at: datetime | None = None
) -> IssuedToken:
    """A new token for `user`; the returned text is the only copy there will be."""
    name = name.strip()
    if not name:
        raise ValueError("name: give the token a name, such as 'nightly export'")
    if expires_at is not None and expires_at <= timezone.now():
        raise ValueError("expires: the expiry must be in the future")
    prefix = secrets.token_hex(PREFIX_LENGTH // 2)
    text = f"{SCHEME}{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        user=user, name=name[:100], prefix=prefix, digest=digest(text), expires_at=expires_at
    )
    return IssuedToken(token, text)


def token_revoke(*, token: ApiToken) -> ApiToken:
    """Revoke a token; the row stays so its owner sees when it was revoked."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_authenticate(text: str, *, now: datetime | None = None) -> ApiToken:
    """The usable token `text` names (with its user); raises TokenRejected saying why not."""
    now = now or timezone.now()
    text = text.strip()
    prefix = text[len(SCHEME) : len(SCHEME) + PREFIX_LENGTH]
    well_formed = text.startswith(SCHEME) and text[len(SCHEME) + PREFIX_LENGTH :][:1] == "_"
    if not well_formed or not all(c in "0123456789abcdef" for c in prefix):
        raise TokenRejected(MALFORMED)
    token = ApiToken.objects.select_related("user").filter(prefix=prefix).first()
    if token is None or not hmac.compare_digest(token.digest, digest(text)):
        raise TokenRejected("unknown token")
    state = token.state(now=now)
    if state != "active":
        raise TokenRejected(f"token '{token.name}' is {state}")
    if not token.user.is_active:
        raise TokenRejected("the token's user is inactive")
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
