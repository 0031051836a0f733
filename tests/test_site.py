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


def _console_output(client_call) -> str:
    """What the project's console log handler printed during `client_call()`."""
    import io
    import logging

    # LOGGING's console (pytest's capture handlers are subclasses).
    console = next(h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler)
    buffer = io.StringIO()
    stream = console.setStream(buffer)
    try:
        client_call()
    finally:
        console.setStream(stream)
    return buffer.getvalue()


def test_a_refused_request_is_logged_in_one_line_without_a_traceback(client) -> None:
    user = get_user_model().objects.create_user("viewer", password="pw-long-enough-1")
    user.groups.add(Group.objects.get(name="Viewers"))
    client.force_login(user)

    printed = _console_output(lambda: client.post("/schedules/new/", {}))

    assert printed.count("Forbidden (Permission denied): /schedules/new/") == 1
    assert "Traceback" not in printed


def test_a_server_error_keeps_its_traceback_in_the_log() -> None:
    import logging

    def fail() -> None:
        try:
            raise RuntimeError("a bug")
        except RuntimeError:
            logging.getLogger("django.request").error(
                "Internal Server Error: /x", exc_info=True, extra={"status_code": 500}
            )

    printed = _console_output(fail)

    assert "Internal Server Error: /x" in printed
    assert "Traceback" in printed and "RuntimeError: a bug" in printed


def test_django_records_are_printed_once_also_with_debug_on() -> None:
    """Django's default console handler (DEBUG only) printed them beside the root's."""
    import logging

    printing = [
        h for h in logging.getLogger("django").handlers if isinstance(h, logging.StreamHandler)
    ]
    assert printing == []
    assert logging.getLogger("django").propagate


def test_what_a_task_logs_reaches_the_console_without_nul_or_lone_surrogates() -> None:
    """Formatted by the console's own formatter, not emitted: pytest's capture of such a
    record cannot cross to the xdist controller (a lone surrogate is not UTF-8)."""
    import logging

    console = next(h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler)
    record = logging.LogRecord("task", logging.WARNING, __file__, 1, "a\x00b \udcff c", (), None)

    printed = console.format(record)

    assert printed.endswith("WARNING task: a\ufffdb \ufffd c")
    assert "\x00" not in printed
