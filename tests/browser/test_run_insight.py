"""Run insight in a real browser: live output, the runs page, reruns, another operator's pause."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Site, rarely

from .conftest import ARTIFACTS, htmx_idle, log_in, serve

pytestmark = pytest.mark.slow

# Screenshots of the new pages, looked at by hand (test-artifacts/ unless set).
SHOTS = Path(os.environ.get("SILLO_SHOTS_DIR") or ARTIFACTS)
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    site = Site(tmp_path_factory.mktemp("insight"))
    site.env["DJANGO_SECURE_COOKIES"] = "false"  # plain http on 127.0.0.1
    site.manage("collectstatic", "--noinput", "-v0")
    site.add_user("operator", "Operators")
    site.add_user("second", "Operators")
    site.add_user("editor", "Editors")
    hourly = rarely()
    site.schedules(
        [
            ("talker", "test.chatty", hourly, {"kwargs": {"words": "live", "hold": 4}}),
            ("broken", "test.fail", hourly, {"kwargs": {"message": "disk <full>"}}),
            ("quick", "test.echo", hourly, {"kwargs": {"n": 1}}),
        ]
    )
    # History to filter: a failure and a success, recorded before the server starts.
    site.manage("schedules", "run", "quick", "--inline")
    site.python(
        "from schedules.models import Run, Schedule\n"
        "s = Schedule.objects.get(code='broken')\n"
        "Run.objects.create(schedule=s, schedule_code='broken', task_name='test.fail', "
        "reason='scheduled', status='failed', error='RuntimeError: disk <full>')\n"
    )
    # Thirty days of history for the charts (screenshots): "history" runs hourly-ish.
    site.schedule("history", "test.echo", hourly)
    site.python(
        "import random\n"
        "from datetime import timedelta\n"
        "from django.utils import timezone\n"
        "from schedules.models import Run, Schedule\n"
        "s = Schedule.objects.get(code='history')\n"
        "rng = random.Random(7)\n"
        "now = timezone.now()\n"
        "runs = []\n"
        "for hour in range(0, 30 * 24, 3):\n"
        "    slot = now - timedelta(hours=hour)\n"
        "    start = slot + timedelta(seconds=rng.uniform(0.01, 0.3 + (hour % 48) / 40))\n"
        "    status = 'failed' if rng.random() < 0.08 + (0.3 if 100 < hour < 130 else 0) "
        "else 'succeeded'\n"
        "    runs.append(Run(schedule=s, schedule_code='history', task_name='test.echo', "
        "reason='scheduled', status=status, slot=slot, queued_at=slot, started_at=start, "
        "finished_at=start + timedelta(seconds=rng.uniform(0.5, 2) + (hour % 24) / 12), "
        "error='RuntimeError: flaky' if status == 'failed' else ''))\n"
        "Run.objects.bulk_create(runs)\n"
    )
    process = serve(site)
    yield site
    site.stop(process)


def shoot(page, name: str) -> None:
    """The page at desktop and phone widths, into SHOTS."""
    SHOTS.mkdir(exist_ok=True)
    for label, (width, height) in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(100)
        page.screenshot(path=str(SHOTS / f"{name}-{label}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def newest_run_id(server, code: str) -> int:
    (row,) = server.wait_for(
        "SELECT id FROM schedules_run WHERE schedule_code = ? ORDER BY id DESC LIMIT 1", code
    )
    return row[0]


def test_a_running_tasks_output_streams_live_and_the_page_turns_final(page, server) -> None:
    log_in(page, server, "operator")
    page.click("a.code:has-text('talker')")
    page.click("button:has-text('Run now')")
    run_id = newest_run_id(server, "talker")
    server.wait_for("SELECT id FROM schedules_run WHERE id = ? AND status = 'running'", run_id)
    page.goto(f"{server.url}/runs/{run_id}/")
    status = page.get_by_test_id("run-status")
    output = page.get_by_test_id("run-output")
    expect(status).to_contain_text("running")
    expect(page.locator("#output-live")).to_be_visible()
    # Lines printed after the page connected arrive while the run still runs.
    expect(output).to_contain_text("still running", timeout=5000)
    count = output.inner_text().count("still running")
    expect(status).to_contain_text("running")
    page.wait_for_timeout(600)
    assert output.inner_text().count("still running") > count
    shoot(page, "run-page-running")
    # It ends: the status, result and whole output replace the live part, no reload.
    expect(status).to_contain_text("succeeded", timeout=15000)
    expect(page.get_by_test_id("run-result")).to_contain_text('"said it"')
    expect(output).to_contain_text("hello live")
    expect(output).to_contain_text("INFO tests.chatty: info live")
    expect(page.locator("#output-live")).to_have_count(0)
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    shoot(page, "run-page-final")


def test_the_runs_page_filters_across_schedules(page, server) -> None:
    log_in(page, server, "operator")
    page.click("nav.sillo-nav a:has-text('Runs')")
    rows = page.locator("#run-rows tr.run-row")
    expect(rows.first).to_be_visible()
    codes = set(rows.locator("td:nth-child(3) a").all_inner_texts())
    assert {"broken", "quick"} <= codes
    page.select_option("select[name=status]", "errors")
    htmx_idle(page)
    expect(page).to_have_url(re.compile(r"status=errors"))
    expect(page.locator("#run-rows .badge.s-succeeded")).to_have_count(0)
    page.fill("input[name=schedule]", "broken")
    page.press("input[name=schedule]", "Enter")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("broken")
    expect(rows.first).to_contain_text("RuntimeError: disk <full>")
    page.fill("input[name=schedule]", "")
    page.select_option("select[name=status]", "")
    page.fill("input[name=task]", "test.echo")
    page.press("input[name=task]", "Enter")
    expect(page).to_have_url(re.compile(r"task=test.echo"))
    expect(rows.filter(has_text="quick")).to_have_count(1)
    for row in rows.all():
        expect(row).to_contain_text("test.echo")
    expect(page.get_by_test_id("export-jsonl")).to_have_attribute(
        "href", re.compile("task=test.echo")
    )
    page.goto(f"{server.url}/runs/")
    shoot(page, "runs-page")


def test_a_rerun_with_other_kwargs(page, server) -> None:
    log_in(page, server, "operator")
    past = newest_run_id(server, "quick")
    page.goto(f"{server.url}/runs/{past}/")
    page.get_by_test_id("rerun").click()
    textarea = page.locator("textarea[name=kwargs]")
    expect(textarea).to_have_value(re.compile(r'"n": 1'))
    textarea.fill('{"n": "not", "extra": true}')
    shoot(page, "rerun-form")
    page.click("button[type=submit]:has-text('Rerun')")
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    expect(page.get_by_test_id("run-kwargs")).to_contain_text('"extra": true')
    expect(page.locator("dl.run-spec")).to_contain_text(f"a rerun of run #{past}")
    expect(page.get_by_test_id("run-status")).to_contain_text("succeeded", timeout=15000)
    expect(page.get_by_test_id("run-result")).to_contain_text('"extra": true')


def test_another_operators_pause_shows_on_my_list_without_a_reload(browser, page, server) -> None:
    log_in(page, server, "operator")
    row = page.locator("tr", has=page.locator("a.code", has_text="quick"))
    expect(row.locator(".badge").first).to_have_text("active")
    page.wait_for_timeout(500)  # the list's socket connects
    other_context = browser.new_context()
    other = other_context.new_page()
    log_in(other, server, "second")
    other.click("a.code:has-text('quick')")
    other.click("form button:has-text('Pause')")
    expect(other.locator("h1")).to_contain_text("paused")
    expect(row.locator(".badge").first).to_have_text("paused", timeout=5000)
    expect(page.get_by_test_id("live-notice")).to_contain_text("quick was paused by second")
    expect(row.locator("button:has-text('Resume')")).to_be_visible()
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    shoot(page, "list-live-change")
    other_context.close()


def test_screens_of_the_new_pages(page, server) -> None:
    log_in(page, server, "editor")
    page.click("a.code:has-text('history')")
    expect(page.get_by_test_id("history-charts")).to_contain_text("Success rate per day")
    shoot(page, "schedule-page-charts")
    page.goto(f"{server.url}/")
    page.click("a.code:has-text('broken')")
    page.click("a:has-text('Run with other kwargs')")
    shoot(page, "run-with-form")
    page.goto(f"{server.url}/audit/")
    expect(page.locator("table.audit tbody tr").first).to_be_visible()
    shoot(page, "audit-page")
    page.goto(f"{server.url}/")
    shoot(page, "list-strips")
