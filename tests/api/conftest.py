"""API test helpers: callers by role, over the session or with a token of their own."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from schedules import tokens
from tests.dashboard.conftest import (  # noqa: F401  (fixtures)
    editor,
    member,
    operator,
    orphan,
    owner,
    schedule,
    stranger,
    viewer,
)

API = "/api/v1"


@dataclass
class Caller:
    """Calls the API as one person, by session login or by bearer token."""

    client: Client
    headers: dict

    def call(self, method: str, path: str, body: object = None, **extra):
        kwargs = {**self.headers, **extra}
        if body is not None:
            kwargs["data"] = json.dumps(body)
            kwargs["content_type"] = "application/json"
        elif method != "GET":  # as `curl -X POST` sends it: no body at all
            kwargs["data"] = ""
            kwargs["content_type"] = "application/json"
        return getattr(self.client, method.lower())(f"{API}{path}", **kwargs)

    def get(self, path: str, **extra):
        return self.call("GET", path, **extra)

    def post(self, path: str, body: object = None, **extra):
        return self.call("POST", path, body, **extra)

    def patch(self, path: str, body: object = None, **extra):
        return self.call("PATCH", path, body, **extra)

    def delete(self, path: str, **extra):
        return self.call("DELETE", path, **extra)


def session_caller(user: User | None, *, csrf: bool = False) -> Caller:
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return Caller(client, {})


def token_caller(user: User, **fields) -> Caller:
    issued = tokens.token_issue(user=user, name=f"{user.username} script", **fields)
    return Caller(Client(), {"HTTP_AUTHORIZATION": f"Bearer {issued.secret}"})


def bearer(text: str) -> Caller:
    return Caller(Client(), {"HTTP_AUTHORIZATION": f"Bearer {text}"})


@pytest.fixture(autouse=True)
def _fresh_throttle():
    """The throttle counts in the cache; each test starts with none spent."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def as_role(db):
    """as_role("viewer", "token") -> a Caller for a new user in that role."""

    def make(role: str, via: str = "session") -> Caller:
        if role == "anonymous":
            return session_caller(None)
        user = api_member(f"{role}-{via}-{next(serial)}", GROUPS[role])
        return token_caller(user) if via == "token" else session_caller(user)

    serial = itertools.count()
    return make


GROUPS = {"stranger": None, "viewer": "Viewers", "operator": "Operators", "editor": "Editors"}


def api_member(username: str, group: str | None = None) -> User:
    """A user in `group`, without a password (hashing one costs a third of a second)."""
    user = User.objects.create_user(username)
    if group and not Group.objects.filter(name=group).exists():
        member("group-maker", group).delete()  # makes the groups, as the dashboard's tests do
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


def errors_of(response) -> dict:
    """{field: message} of an error response, checking the one error shape."""
    body = response.json()
    assert set(body) == {"code", "message", "errors"}, body
    assert isinstance(body["message"], str) and body["message"]
    return {e["field"]: e["message"] for e in body["errors"]}


def expired(user: User) -> Caller:
    issued = tokens.token_issue(user=user, name="old", expires_at=timezone.now() + timedelta(1))
    issued.token.expires_at = timezone.now() - timedelta(seconds=1)
    issued.token.save()
    return bearer(issued.secret)
