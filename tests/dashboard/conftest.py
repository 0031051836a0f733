"""People of the dashboard tests: an owner, an editor, an operator, a viewer, a stranger."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group, User

from tests.factories import every, make_schedule


def member(username: str, group: str | None = None, **fields) -> User:
    user = User.objects.create_user(username, password="a-long-test-password", **fields)
    if group and not Group.objects.filter(name=group).exists():
        # Transactional tests flush the rows the data migration made; make them again.
        migration = importlib.import_module("schedules.migrations.0002_groups")
        migration.create_groups(django_apps, None)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def owner(db) -> User:
    return member("owner", is_superuser=True, is_staff=True)


@pytest.fixture
def editor(db) -> User:
    return member("editor", "Editors")


@pytest.fixture
def operator(db) -> User:
    return member("operator", "Operators")


@pytest.fixture
def viewer(db) -> User:
    return member("viewer", "Viewers")


@pytest.fixture
def stranger(db) -> User:
    return member("stranger")


@pytest.fixture
def schedule(db):
    return make_schedule("nightly", "test.echo", {"kind": "cron", "expression": "0 3 * * *"})


@pytest.fixture
def orphan(db):
    return make_schedule("ghost", "no.such.task", every(60))


HX = {"HTTP_HX_REQUEST": "true"}
