"""The site shell: login everywhere but /health/, production-safe settings."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

pytestmark = pytest.mark.django_db


def test_home_requires_login(client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/")


def test_home_for_a_logged_in_user(client) -> None:
    user = get_user_model().objects.create_user("ops", password="pw-long-enough-1")
    client.force_login(user)
    assert client.get("/").status_code == 403  # logged in, but no view permission
    user.groups.add(Group.objects.get(name="Viewers"))
    response = client.get("/")
    assert response.status_code == 200
    assert b"Sillo Dash" in response.content


def test_login_page_is_public(client) -> None:
    response = client.get("/login/")
    assert response.status_code == 200
    assert b'name="password"' in response.content


def test_pages_name_an_icon_that_exists(client) -> None:
    """Browsers ask for /favicon.ico (a 404 in every console) unless a page names an icon."""
    from django.contrib.staticfiles import finders

    page = client.get("/login/").content.decode()
    assert 'rel="icon" href="/static/schedules/img/favicon.svg"' in page
    assert finders.find("schedules/img/favicon.svg")


def test_admin_requires_staff(client) -> None:
    assert client.get("/admin/").status_code == 302


def test_production_safe_defaults() -> None:
    assert settings.DEBUG is False
    assert "*" not in settings.ALLOWED_HOSTS
    assert settings.SESSION_COOKIE_SECURE is True
    assert settings.SECRET_KEY and "insecure" not in settings.SECRET_KEY


@pytest.mark.sqlite
def test_sqlite_is_tuned_for_two_processes() -> None:
    options = settings.DATABASES["default"]["OPTIONS"]
    assert "journal_mode=WAL" in options["init_command"]
    assert options["transaction_mode"] == "IMMEDIATE"
    assert options["timeout"] >= 5


def test_ensureadmin_creates_one_admin_once(manage) -> None:
    assert manage("migrate", "--noinput").returncode == 0
    first = manage("ensureadmin")
    assert first.returncode == 0
    assert "as 'admin' with password '" in first.stdout
    second = manage("ensureadmin")
    assert second.returncode == 0 and second.stdout == ""
