"""Tokens and sessions: who is let in, with whose permissions, and how often."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedules import tokens
from schedules.models import ApiToken, Schedule

from .conftest import api_member, bearer, errors_of, expired, session_caller, token_caller


@pytest.fixture
def viewer_user(db):
    return api_member("vera", "Viewers")


def test_a_token_is_stored_only_as_its_hash(viewer_user) -> None:
    issued = tokens.token_issue(user=viewer_user, name="export")
    stored = ApiToken.objects.get()
    assert issued.secret.startswith(f"sdk_{stored.prefix}_")
    assert issued.secret not in str(list(ApiToken.objects.values()))
    assert stored.digest == tokens.digest(issued.secret)


def test_a_token_acts_with_its_users_permissions(viewer_user, schedule) -> None:
    api = token_caller(viewer_user)
    assert api.get("/schedules/nightly").status_code == 200
    assert api.post("/schedules/nightly/pause").status_code == 403
    viewer_user.groups.clear()
    assert api.get("/schedules/nightly").status_code == 403


def test_an_expired_token_is_refused_saying_so(viewer_user) -> None:
    response = expired(viewer_user).get("/stats")
    assert response.status_code == 401
    assert errors_of(response) == {None: "token 'old' is expired"}


def test_a_revoked_token_is_refused_saying_so(viewer_user) -> None:
    issued = tokens.token_issue(user=viewer_user, name="ci")
    assert bearer(issued.secret).get("/stats").status_code == 200
    tokens.token_revoke(token=issued.token)
    response = bearer(issued.secret).get("/stats")
    assert response.status_code == 401
    assert errors_of(response) == {None: "token 'ci' is revoked"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hunter2", tokens.MALFORMED),
        ("sdk_bogus", tokens.MALFORMED),
        ("sdk_0123456789", tokens.MALFORMED),
        ("sdk_01234567_not-a-real-secret", "unknown token"),
        ("sdk_0123456\x00_secret", tokens.MALFORMED),
    ],
)
def test_a_wrong_token_is_refused_even_with_a_session(viewer_user, text, message) -> None:
    api = session_caller(viewer_user)
    api.headers["HTTP_AUTHORIZATION"] = f"Bearer {text}"
    response = api.get("/stats")
    assert response.status_code == 401
    assert errors_of(response) == {None: message}


def test_a_tampered_token_with_a_real_prefix_is_unknown(viewer_user) -> None:
    issued = tokens.token_issue(user=viewer_user, name="ci")
    response = bearer(issued.secret[:-2] + "xx").get("/stats")
    assert errors_of(response) == {None: "unknown token"}


def test_an_inactive_users_token_is_refused(viewer_user) -> None:
    issued = tokens.token_issue(user=viewer_user, name="ci")
    viewer_user.is_active = False
    viewer_user.save()
    assert errors_of(bearer(issued.secret).get("/stats")) == {None: "the token's user is inactive"}


def test_a_token_records_its_last_use_at_most_once_a_minute(viewer_user) -> None:
    issued = tokens.token_issue(user=viewer_user, name="ci")
    now = timezone.now()
    tokens.token_authenticate(issued.secret, now=now)
    tokens.token_authenticate(issued.secret, now=now + timedelta(seconds=30))
    assert ApiToken.objects.get().last_used_at == now
    tokens.token_authenticate(issued.secret, now=now + timedelta(seconds=61))
    assert ApiToken.objects.get().last_used_at == now + timedelta(seconds=61)


def test_issuing_needs_a_name_and_a_future_expiry(viewer_user) -> None:
    with pytest.raises(ValueError, match="name"):
        tokens.token_issue(user=viewer_user, name="  ")
    with pytest.raises(ValueError, match="expiry must be in the future"):
        tokens.token_issue(user=viewer_user, name="x", expires_at=timezone.now())


def test_a_session_post_needs_the_csrf_token(schedule) -> None:
    user = api_member("olga", "Operators")
    api = session_caller(user, csrf=True)
    refused = api.post("/schedules/nightly/pause")
    assert refused.status_code == 403
    assert "CSRF" in errors_of(refused)[None]
    assert Schedule.objects.get(code="nightly").status == "active"
    assert api.get("/schedules/nightly").status_code == 200  # reads need no CSRF token

    api.client.get("/")  # the dashboard sets the CSRF cookie
    token = api.client.cookies["csrftoken"].value
    done = api.post("/schedules/nightly/pause", HTTP_X_CSRFTOKEN=token)
    assert done.status_code == 200, done.content


def test_a_token_post_needs_no_csrf_token(schedule) -> None:
    api = token_caller(api_member("otto", "Operators"))
    api.client = type(api.client)(enforce_csrf_checks=True)
    assert api.post("/schedules/nightly/pause").status_code == 200


def test_each_token_is_throttled_on_its_own(viewer_user, settings) -> None:
    settings.SILLO_API_THROTTLE = "3/min"
    first, second = token_caller(viewer_user), token_caller(viewer_user)
    assert [first.get("/stats").status_code for _ in range(3)] == [200, 200, 200]
    refused = first.get("/stats")
    assert refused.status_code == 429
    assert errors_of(refused)[None].startswith("too many requests")
    assert int(refused["Retry-After"]) > 0
    assert second.get("/stats").status_code == 200


def test_the_throttle_can_be_turned_off(viewer_user, settings) -> None:
    settings.SILLO_API_THROTTLE = None
    api = token_caller(viewer_user)
    assert {api.get("/stats").status_code for _ in range(5)} == {200}
