"""Channel URLs: which kind each is, what is refused, and what a masked URL still shows."""

from __future__ import annotations

import pytest

from schedules.notify.targets import InvalidChannel, kind_of, mask, parse


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://hooks.example.com/x", "webhook"),
        ("http://127.0.0.1:8080/in", "webhook"),
        ("mailto:ops@example.com", "email"),
        ("slack://TokenA/TokenB/TokenC", "apprise"),
        ("ntfy://ntfy.sh/topic", "apprise"),
    ],
)
def test_the_scheme_decides_the_kind(url, kind) -> None:
    assert kind_of(url) == kind
    assert parse(url).kind == kind


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("not a url", "is not a URL"),
        ("https:///path-only", "has no host"),
        ("mailto:", "expected mailto:someone@example.com"),
        ("mailto:nobody", "expected mailto:someone@example.com"),
        ("nosuchscheme://x", "apprise does not understand"),
    ],
)
def test_bad_urls_are_refused_with_the_reason(url, message) -> None:
    with pytest.raises(InvalidChannel, match=message):
        parse(url)


def test_a_webhook_secret_travels_in_the_fragment_and_is_never_sent() -> None:
    target = parse("https://hooks.example.com/in?x=1#secret=s3cr%26t")
    assert target.url == "https://hooks.example.com/in?x=1"
    assert target.secret == "s3cr&t"
    assert parse(target.with_secret).secret == "s3cr&t"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.example.com/services/T0/B0/SECRET", "https://hooks.example.com/•••"),
        ("https://user:pw@hooks.example.com/", "https://us•••@hooks.example.com"),
        ("slack://TokenA/TokenB/TokenC", "slack://Toke•••/•••"),
        ("tgram://123456:ABCDEF/987", "tgram://1234•••/•••"),
        ("mailto:ops@example.com?subject=x", "mailto:ops@example.com"),
    ],
)
def test_masking_hides_every_secret_part(url, shown) -> None:
    assert mask(url) == shown
