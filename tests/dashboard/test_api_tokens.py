"""The API tokens page: a user creates tokens (shown once), sees them, revokes them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from schedules import tokens
from schedules.models import ApiToken

URL = "/account/api-tokens/"


@pytest.fixture
def client_of():
    def login(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return login


def test_it_requires_login(db) -> None:
    response = Client().get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_a_new_token_is_shown_once_and_stored_hashed(client_of, viewer) -> None:
    client = client_of(viewer)
    response = client.post(URL, {"name": "nightly export", "expires": "30"})
    assert response.status_code == 201
    secret = response.context["issued"].secret
    assert secret.encode() in response.content
    assert response["Cache-Control"] == "no-store"
    token = ApiToken.objects.get(user=viewer)
    assert token.digest == tokens.digest(secret)
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)

    again = client.get(URL)
    assert secret.encode() not in again.content
    assert f"sdk_{token.prefix}_".encode() in again.content
    assert b"nightly export" in again.content

    api = Client().get("/api/v1/stats", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.status_code == 200


def test_a_token_without_expiry_never_expires(client_of, viewer) -> None:
    client_of(viewer).post(URL, {"name": "forever", "expires": ""})
    assert ApiToken.objects.get().expires_at is None


def test_a_token_needs_a_name(client_of, viewer) -> None:
    response = client_of(viewer).post(URL, {"name": "", "expires": "7"})
    assert response.status_code == 422
    assert response.context["form"].errors["name"]
    assert not ApiToken.objects.exists()


def test_revoking_a_token_stops_it_working(client_of, viewer) -> None:
    issued = tokens.token_issue(user=viewer, name="ci")
    response = client_of(viewer).post(f"{URL}{issued.token.pk}/revoke/")
    assert response.status_code == 302
    assert response["Location"] == "../../"
    issued.token.refresh_from_db()
    assert issued.token.state() == "revoked"
    api = Client().get("/api/v1/stats", HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    assert api.status_code == 401


def test_nobody_sees_or_revokes_another_users_tokens(client_of, viewer, operator) -> None:
    issued = tokens.token_issue(user=operator, name="operator's own")
    client = client_of(viewer)
    assert b"operator&#x27;s own" not in client.get(URL).content
    assert client.post(f"{URL}{issued.token.pk}/revoke/").status_code == 404
    issued.token.refresh_from_db()
    assert issued.token.state() == "active"


def test_the_page_posts_need_the_csrf_token(viewer) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(viewer)
    assert client.post(URL, {"name": "x"}).status_code == 403
    assert not ApiToken.objects.exists()


def test_the_list_shows_each_tokens_state(client_of, viewer) -> None:
    tokens.token_issue(user=viewer, name="live")
    old = tokens.token_issue(user=viewer, name="old", expires_at=timezone.now() + timedelta(1))
    ApiToken.objects.filter(pk=old.token.pk).update(expires_at=timezone.now() - timedelta(1))
    gone = tokens.token_issue(user=viewer, name="gone")
    tokens.token_revoke(token=gone.token)
    rows = {token.name: state for token, state in client_of(viewer).get(URL).context["rows"]}
    assert rows == {"live": "active", "old": "expired", "gone": "revoked"}


def test_an_administrator_revokes_tokens_in_the_admin_but_cannot_issue_one(
    client_of, owner, viewer
) -> None:
    issued = tokens.token_issue(user=viewer, name="ci")
    client = client_of(owner)
    assert client.get("/admin/schedules/apitoken/").status_code == 200
    assert client.get("/admin/schedules/apitoken/add/").status_code == 403
    response = client.post(
        "/admin/schedules/apitoken/",
        {"action": "revoke", "_selected_action": [issued.token.pk]},
    )
    assert response.status_code == 302
    issued.token.refresh_from_db()
    assert issued.token.state() == "revoked"
