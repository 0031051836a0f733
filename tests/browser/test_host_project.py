"""The wheel in a new project, live: the dashboard under a prefix and its websocket.

The production pass (`python -m tests.production_profile`): the README's steps for
live pages with Redis as the channel layer, then Chromium on the new project's
`runscheduler --serve`.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import free_port
from tests.e2e.test_package import (  # noqa: F401  (fixtures: the wheel in a new project)
    PREFIX,
    PROJECT,
    configured,
    host,
    readme_block,
    wheel,
)

pytestmark = [
    pytest.mark.production,
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"),
        reason="the production pass: run python -m tests.production_profile",
    ),
]


@pytest.fixture(scope="module")
def live(host, configured):  # noqa: F811
    """The README's live-pages steps, Redis for the layer, a user's session, the server."""
    settings_step = readme_block("CHANNEL_LAYERS = ").replace("mysite", PROJECT)
    host.append(f"{PROJECT}/settings.py", settings_step)
    # Several processes share live events through Redis in production (sillo-dash[redis]).
    redis = {"BACKEND": "channels_redis.core.RedisChannelLayer",
             "CONFIG": {"hosts": [os.environ["REDIS_URL"]]}}  # fmt: skip
    host.append(f"{PROJECT}/settings.py", f'CHANNEL_LAYERS["default"] = {redis!r}\n')
    asgi = host.folder / PROJECT / "asgi.py"
    text = asgi.read_text()
    assert "application = get_asgi_application()" in text
    three_lines = readme_block("django_asgi_app = ").strip()
    asgi.write_text(text.replace("application = get_asgi_application()", three_lines))
    assert "schedules.W010" not in host.manage("check").stderr  # live updates are on

    login = (
        "from django.contrib.auth import get_user_model; from django.test import Client\n"
        "user = get_user_model().objects.create_superuser('boss', password='a-long-password')\n"
        "client = Client(); client.force_login(user); print(client.cookies['sessionid'].value)"
    )
    session = host.manage("shell", "-c", login).stdout.split()[-1]  # after the shell's notes
    port = free_port()
    log = open(host.folder / "serve.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        [str(host.python), "manage.py", "runscheduler", "--serve", f"127.0.0.1:{port}"],
        cwd=host.folder, env=host.env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    yield f"http://127.0.0.1:{port}", session, server
    server.terminate()
    server.wait(30)
    log.close()


def test_the_dashboard_renders_under_the_prefix_and_its_socket_connects(
    host,  # noqa: F811
    live,
    page,
) -> None:
    base, session, server = live
    assert session and session.isalnum(), repr(session)
    cookie = {"name": "sessionid", "value": session, "domain": "127.0.0.1", "path": "/"}
    page.context.add_cookies([cookie])
    deadline = time.monotonic() + 30
    while True:
        try:
            page.goto(f"{base}/{PREFIX}live/")
            break
        except Exception:
            if time.monotonic() > deadline or server.poll() is not None:
                raise
            time.sleep(0.3)
    expect(page.get_by_role("heading", name="Live log")).to_be_visible()
    expect(page.get_by_test_id("ws-state")).to_have_text("live", timeout=15000)

    # The served scheduler's first pass creates the host task's code default.
    deadline = time.monotonic() + 30
    while not host.query("SELECT 1 FROM schedules_schedule WHERE code = 'reports.hello'"):
        assert time.monotonic() < deadline, "the code default was never created"
        time.sleep(0.2)
    page.goto(f"{base}/{PREFIX}")
    expect(page.get_by_role("link", name="reports.hello")).to_be_visible()
    socket = page.locator("#table").get_attribute("ws-connect")
    assert socket.startswith(f"/{PREFIX}ws/runs/?view=list")
    page.get_by_role("link", name="Tasks").click()
    expect(page).to_have_url(f"{base}/{PREFIX}tasks/")
    expect(page.get_by_text("reports.hello").first).to_be_visible()
