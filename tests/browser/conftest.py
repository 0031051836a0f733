"""A real `runscheduler --serve` (daphne + scheduler) and Debian's Chromium."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.conftest import PASSWORD, Site, free_port, rarely

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def pytest_collection_modifyitems(config, items) -> None:
    if CHROMIUM:
        return
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(
                pytest.mark.skip(reason="no chromium on this machine (apt-get install chromium)")
            )


def serve(site: Site) -> subprocess.Popen:
    """`runscheduler --serve` on a free port, once its login page answers; sets `site.url`."""
    port = free_port()
    process = site.start("--serve", f"127.0.0.1:{port}")
    site.url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{site.url}/login/", timeout=2)
            return process
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"server did not start:\n{site.logs()}") from None
            time.sleep(0.2)  # polling a real server's start-up, not a slot


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    # A test tool's own browser download cannot work here: use the system one.
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
        ],
    }  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The product as `make run` starts it, on a throwaway database, with test users."""
    site = Site(tmp_path_factory.mktemp("browser"))
    site.env["SILLO_EXTRA_APPS"] = "tests.dupapp"
    site.env["DJANGO_SECURE_COOKIES"] = "false"  # plain http on 127.0.0.1
    site.manage("collectstatic", "--noinput", "-v0")
    site.add_user("operator", "Editors")
    site.add_user("viewer", "Viewers")
    site.schedules(
        [
            ("slow-report", "test.sleep", rarely(),
             {"kwargs": {"seconds": 1.5}}),
            ("ghost", "no.such.task", {"kind": "interval", "every": 60}, {}),
            ("twin", "test.twin", {"kind": "interval", "every": 60}, {}),
        ]
    )  # fmt: skip
    process = serve(site)
    yield site
    site.stop(process)


def log_in(page, server, username: str) -> None:
    page.goto(f"{server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def htmx_idle(page) -> None:
    """Wait until htmx has swapped and settled: new content gets its handlers on settle."""
    # Polled with evaluate(): wait_for_function compiles its predicate with `new Function`,
    # which the Content Security Policy (no 'unsafe-eval') refuses in the page.
    busy = (
        "document.querySelectorAll('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"
        ".length"
    )
    for _ in range(300):
        if page.evaluate(busy) == 0:
            break
        page.wait_for_timeout(20)
    page.wait_for_timeout(50)


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
