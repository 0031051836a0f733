"""The app in a host: under any prefix, login and permissions by itself, what check says."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.checks import run_checks
from django.test import Client
from django.urls import URLPattern, URLResolver, reverse

from schedules import urls as app_urls
from schedules.checks import check_host_setup
from schedules.routing import asgi_application, mounted_websocket_urlpatterns, socket_path

from .conftest import HX

PREFIX = "/ops/scheduler/"
LOGIN_MIDDLEWARE = "django.contrib.auth.middleware.LoginRequiredMiddleware"
SAMPLE_ARGS = {"pk": 1, "action": "pause", "index": 0, "fmt": "jsonl"}


@pytest.fixture
def host(settings):
    """A host project: the app under a prefix, without LoginRequiredMiddleware, and
    without the reference project's templates (the app's own layout applies)."""
    settings.ROOT_URLCONF = "tests.hosturls"
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": []}]
    settings.LOGIN_URL = "/accounts/login/"
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != LOGIN_MIDDLEWARE]
    return settings


def app_urls_of_every_view() -> list[tuple[str, str]]:
    found = []
    for pattern in app_urls.urlpatterns:
        if isinstance(pattern, URLResolver):
            continue  # the JSON API: its own token or session auth (tests/api)
        assert isinstance(pattern, URLPattern)
        names = re.findall(r"<(?:\w+:)?(\w+)>", str(pattern.pattern))
        kwargs = {n: SAMPLE_ARGS[n] for n in names}
        found.append((pattern.name, reverse(f"schedules:{pattern.name}", kwargs=kwargs)))
    return found


PUBLIC = {"health", "metrics"}  # GET /health/ for monitors; /metrics has its own token


@pytest.mark.django_db
def test_every_page_and_action_sends_anonymous_users_to_the_hosts_login(host) -> None:
    client = Client()
    checked = 0
    for name, url in app_urls_of_every_view():
        assert url.startswith(PREFIX), (name, url)
        if name in PUBLIC:
            continue
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code == 302, (name, method, response.status_code)
            assert response["Location"].startswith("/accounts/login/?next=/ops/scheduler/")
        checked += 1
    assert checked >= 12


@pytest.mark.django_db
def test_an_htmx_request_of_an_anonymous_user_reloads_the_page_at_the_login(host) -> None:
    response = Client().post(f"{PREFIX}schedules/1/pause/", **HX,
                             HTTP_HX_CURRENT_URL=f"http://testserver{PREFIX}")  # fmt: skip
    assert response.status_code == 200
    assert response["HX-Redirect"].startswith("/accounts/login/?next=")


@pytest.mark.django_db
def test_health_stays_public_under_the_prefix(host) -> None:
    assert Client().get(f"{PREFIX}health/").status_code in (200, 503)


@pytest.mark.django_db
def test_a_logged_in_user_without_the_view_permission_is_refused(host, stranger) -> None:
    client = Client()
    client.force_login(stranger)
    assert client.get(PREFIX).status_code == 403


@pytest.mark.django_db
def test_every_link_form_htmx_request_and_socket_follows_the_prefix(host, editor, schedule) -> None:
    client = Client()
    client.force_login(editor)
    for url in (PREFIX, f"{PREFIX}schedules/{schedule.pk}/", f"{PREFIX}live/", f"{PREFIX}tasks/",
                f"{PREFIX}schedules/new/"):  # fmt: skip
        html = client.get(url).content.decode()
        targets = re.findall(r'(?:href|action|hx-get|hx-post|ws-connect)="(/[^"]*)"', html)
        assert targets, url
        outside = [t for t in targets if not t.startswith((PREFIX, "/static/"))]
        assert outside == [], (url, outside)
    html = client.get(PREFIX).content.decode()
    assert f'ws-connect="{PREFIX}ws/runs/?view=list' in html


def test_the_websocket_route_follows_the_mount(host) -> None:
    assert socket_path() == "ops/scheduler/ws/runs/"
    routes = [str(route.pattern) for route in mounted_websocket_urlpatterns()]
    assert routes == ["ops/scheduler/ws/runs/", "ops/scheduler/ws/incidents/"]


@pytest.mark.django_db(transaction=True)
async def test_the_asgi_helper_serves_the_socket_under_the_prefix(host, viewer) -> None:
    from django.core.asgi import get_asgi_application

    application = asgi_application(get_asgi_application())
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    refused = WebsocketCommunicator(application, f"{PREFIX}ws/runs/", headers=headers)
    connected, code = await refused.connect()
    assert (connected, code) == (False, 4403)  # anonymous: the consumer checks the login
    await refused.disconnect()

    client = Client()
    await sync_to_async(client.force_login)(viewer)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    mine = WebsocketCommunicator(
        application, f"{PREFIX}ws/runs/?view=log", headers=[*headers, (b"cookie", cookie)]
    )
    connected, _ = await mine.connect()
    assert connected
    await mine.disconnect()


def test_the_http_url_of_the_socket_says_what_it_is(host, viewer) -> None:
    client = Client()
    client.force_login(viewer)
    response = client.get(f"{PREFIX}ws/runs/")
    assert response.status_code == 426


@pytest.mark.django_db
def test_without_a_channel_layer_pages_work_and_say_live_updates_are_off(
    host, viewer, schedule
) -> None:
    host.CHANNEL_LAYERS = {}
    client = Client()
    client.force_login(viewer)
    for url in (PREFIX, f"{PREFIX}schedules/{schedule.pk}/", f"{PREFIX}live/"):
        response = client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        assert "Live updates are off" in html
        assert "ws-connect" not in html
    warnings = [m.id for m in check_host_setup()]
    assert warnings == ["schedules.W010"]


def without(names: list[str], name: str) -> list[str]:
    return [n for n in names if n != name]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s.MIDDLEWARE.remove("django_htmx.middleware.HtmxMiddleware"),
         ("schedules.E011", "django_htmx.middleware.HtmxMiddleware is not in MIDDLEWARE")),
        (lambda s: setattr(s, "INSTALLED_APPS", without(s.INSTALLED_APPS, "django_htmx")),
         ("schedules.E010", '"django_htmx" is not in INSTALLED_APPS')),
        (lambda s: setattr(s, "INSTALLED_APPS", without(s.INSTALLED_APPS, "channels")),
         ("schedules.E010", '"channels" is not in INSTALLED_APPS')),
        (lambda s: setattr(s, "CHANNEL_LAYERS", {}),
         ("schedules.W010", "no channel layer (CHANNEL_LAYERS): live updates are off")),
        (lambda s: setattr(s, "TEMPLATES", [{**s.TEMPLATES[0], "APP_DIRS": False}]),
         ("schedules.E012", "no Django template engine finds the app's templates")),
    ],
)  # fmt: skip
def test_check_names_what_a_host_is_missing(settings, change, expected) -> None:
    settings.MIDDLEWARE = list(settings.MIDDLEWARE)
    change(settings)
    found = [(m.id, m.msg) for m in check_host_setup()]
    assert len(found) == 1, found
    assert found[0][0] == expected[0]
    assert expected[1] in found[0][1]


def test_the_reference_project_passes_its_own_checks(db) -> None:
    assert [m for m in run_checks() if m.id.startswith("schedules.")] == []


def test_a_database_without_the_tally_triggers_is_named_by_check(monkeypatch) -> None:
    """Only SQLite and PostgreSQL get the run tallies' triggers (schedules/run_tallies.py):
    on another backend the schedule page would count no runs, and `check` says so."""
    from django.db import connection

    assert "schedules.W012" not in [m.id for m in check_host_setup()]
    monkeypatch.setattr(connection, "vendor", "mysql")
    found = {m.id: m.msg for m in check_host_setup()}
    assert "mysql" in found["schedules.W012"]


def test_sqlite_storing_local_times_is_named_by_check(settings, monkeypatch) -> None:
    """The tallies' SQLite triggers read stored times as UTC, as Django stores them with
    USE_TZ: stored in local time, runs near midnight would count on the wrong day."""
    from django.db import connection

    monkeypatch.setattr(connection, "vendor", "sqlite")  # the production pass's too
    assert "schedules.W013" not in [m.id for m in check_host_setup()]
    settings.USE_TZ = False
    assert "schedules.W013" in [m.id for m in check_host_setup()]


def test_sqlite_without_immediate_transactions_is_named_by_check(monkeypatch) -> None:
    """A host on startproject's plain SQLite answered concurrent API writes with
    "database is locked" (an integrator's trial): `check` names the options."""
    from django.db import connection

    monkeypatch.setattr(connection, "vendor", "sqlite")  # the production pass's too
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", {"transaction_mode": "IMMEDIATE"})
    assert "schedules.W015" not in [m.id for m in check_host_setup()]
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", {})
    found = {m.id: m for m in check_host_setup()}
    assert '"transaction_mode": "IMMEDIATE"' in found["schedules.W015"].hint
