"""Channel targets: where one notification goes, from a dashboard channel or SILLO_NOTIFY.

A URL decides the kind: `http(s)://` is a JSON webhook, `mailto:` an email
address (several, comma-separated), any other scheme an apprise URL (Slack,
Teams, Discord, Telegram, ntfy, Pushover, ...). A webhook URL from the
environment carries its HMAC secret in the fragment (`#secret=...`), which is
never sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ..conf import setting

WEBHOOK, EMAIL, APPRISE = "webhook", "email", "apprise"
MASK = "•••"


class InvalidChannel(ValueError):
    """A channel URL that no kind accepts; the message says why."""


@dataclass(frozen=True)
class Target:
    kind: str
    url: str
    secret: str = ""
    label: str = ""
    channel_id: int | None = None

    @property
    def masked(self) -> str:
        return mask(self.url)

    @property
    def with_secret(self) -> str:
        """The URL as SILLO_NOTIFY gives it (parse() reads the secret back)."""
        return f"{self.url}#{urlencode({'secret': self.secret})}" if self.secret else self.url


def kind_of(url: str) -> str:
    scheme = urlsplit(url.strip()).scheme.lower()
    if not scheme:
        raise InvalidChannel(f"{mask(url)!r} is not a URL (expected scheme://...)")
    if scheme in ("http", "https"):
        return WEBHOOK
    if scheme == "mailto":
        return EMAIL
    return APPRISE


def parse(url: str, *, secret: str = "", label: str = "", channel_id: int | None = None) -> Target:
    """A target for `url`; raises InvalidChannel for a URL no kind can use."""
    url = url.strip()
    kind = kind_of(url)
    if kind == WEBHOOK:
        parts = urlsplit(url)
        if not parts.netloc:
            raise InvalidChannel(f"webhook URL {mask(url)!r} has no host")
        fragment = dict(parse_qsl(parts.fragment))
        secret = secret or fragment.get("secret", "")
        url = urlunsplit(parts._replace(fragment=""))
    elif kind == EMAIL:
        addresses = email_addresses(url)
        if not addresses or not all(re.fullmatch(r"[^@\s,]+@[^@\s,]+", a) for a in addresses):
            raise InvalidChannel(f"{url!r}: expected mailto:someone@example.com[,other@...]")
    else:
        # Deferred: apprise loads every plugin on import; only validation and sending need it.
        import apprise

        if apprise.Apprise.instantiate(url, suppress_exceptions=True) is None:
            raise InvalidChannel(f"apprise does not understand {mask(url)!r}")
    return Target(kind, url, secret, label or mask(url), channel_id)


def email_addresses(url: str) -> list[str]:
    return [unquote(a).strip() for a in url.split(":", 1)[1].split("?")[0].split(",") if a.strip()]


def mask(url: str) -> str:
    """The URL with its secrets hidden: password, path and query beyond the host.

    Chat URLs keep tokens in the user, the path or the query (slack://T/B/C,
    tgram://bottoken/chat), so only the scheme, the host and the first path
    segment's first characters are shown.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return MASK
    if parts.scheme.lower() == "mailto":
        return url.split("?")[0]
    userinfo, _, host = parts.netloc.rpartition("@")
    user = f"{userinfo.split(':')[0][:2]}{MASK}@" if userinfo else ""
    if parts.scheme.lower() not in ("http", "https"):
        host = f"{host[:4]}{MASK}" if len(host) > 4 else host  # chat tokens live here too
    path = f"/{MASK}" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{user}{host}{path}"


def env_targets() -> list[Target]:
    """The channels of SILLO_NOTIFY; a bad URL is skipped (the system check reports it)."""
    targets = []
    for url in setting("SILLO_NOTIFY"):
        try:
            targets.append(parse(url, label=f"{mask(url)} (SILLO_NOTIFY)"))
        except InvalidChannel:
            continue
    return targets


def env_problems() -> list[str]:
    problems = []
    for url in setting("SILLO_NOTIFY"):
        try:
            parse(url)
        except InvalidChannel as exc:
            problems.append(str(exc))
    return problems
