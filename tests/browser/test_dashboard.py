"""The dashboard in a real browser against a real daphne + scheduler process."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from channels.testing import WebsocketCommunicator
from django.test import override_settings
from playwright.sync_api import expect

from .conftest import htmx_idle, log_in

pytestmark = pytest.mark.slow


def test_an_anonymous_visitor_is_sent_to_login(page, server) -> None:
    page.goto(f"{server.url}/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))


def test_create_a_cron_schedule_with_live_preview_and_inline_errors(page, server) -> None:
    log_in(page, server, "operator")
    page.goto(f"{server.url}/schedules/new/")
    page.fill("#id_code", "weekday-digest")
    page.select_option("#id_task_name", "test.echo")
    expression = page.get_by_test_id("cron-expression")
    expression.fill("0 9 * * 1-5")
    expect(page.get_by_test_id("preview-text")).to_have_text("At 09:00, Monday through Friday, UTC")
    expression.fill("30 7 * * 6")
    expect(page.get_by_test_id("preview-text")).to_have_text("At 07:30, only on Saturday, UTC")
    expression.fill("0 9 * * 8")
    expect(page.locator("#err-t")).to_have_text("day-of-week 8 is out of range 0-7")
    expression.fill("0 9 * * 5")
    expect(page.locator("#err-t")).to_be_empty()
    page.click("button[type=submit]:has-text('Save')")
    expect(page.locator("h1")).to_contain_text("weekday-digest")
    expect(page.locator("dl.spec")).to_contain_text("At 09:00, only on Friday, UTC")


def test_run_now_shows_queued_running_and_the_outcome_live(page, server, artifacts) -> None:
    log_in(page, server, "operator")
    page.click("a.code:has-text('slow-report')")
    state = page.get_by_test_id("run-state")
    page.click("button:has-text('Run now')")
    expect(state).to_contain_text(re.compile("queued|running"))
    expect(state).to_contain_text("running", timeout=5000)
    expect(state).to_contain_text("succeeded", timeout=10000)
    expect(state).to_contain_text(re.compile(r"in \d+ ms"))
    page.reload()
    page.screenshot(path=str(artifacts / "schedule-page.png"), full_page=True)


def test_the_run_history_pages_older_and_back_in_place(page, server) -> None:
    """The schedule page's history: "Older ›" swaps in the next 25 runs by cursor (no
    reload, the charts stay), "« Newest" brings the first page back."""
    server.python(
        "from datetime import timedelta\n"
        "from django.utils import timezone\n"
        "from schedules.bulk import insert_rows\n"
        "from schedules.models import Schedule\n"
        "from schedules.scheduler.records import new_run\n"
        "owner = Schedule.objects.create(code='paged', task_name='test.echo',"
        " trigger={'kind': 'interval', 'every': 86400 * 300},"
        " next_run_at=timezone.now() + timedelta(days=300))\n"
        "now = timezone.now()\n"
        "insert_rows([new_run(owner, reason='manual', slot=None,"
        " now=now - timedelta(minutes=i)) for i in range(30)])\n"
    )
    log_in(page, server, "viewer")
    page.click("a.code:has-text('paged')")
    history = page.locator("#history")
    expect(history.locator("tbody tr")).to_have_count(25)
    newest = history.locator("tbody tr").first.get_attribute("id")
    page.evaluate("window.stayed = true")  # gone if the page reloads
    page.get_by_test_id("older").click()
    expect(history.locator("tbody tr")).to_have_count(5)
    expect(history).to_contain_text("Older runs")
    assert page.evaluate("window.stayed") is True
    expect(page.get_by_test_id("history-charts")).to_be_visible()
    history.get_by_role("link", name="« Newest").click()
    expect(history.locator("tbody tr")).to_have_count(25)
    expect(history.locator("tbody tr").first).to_have_attribute("id", newest)


def test_pause_and_resume_change_the_row(page, server) -> None:
    log_in(page, server, "operator")
    row = page.locator("tr", has=page.locator("a.code", has_text="slow-report"))
    row.locator("button:has-text('Pause')").click()
    expect(row.locator(".badge").first).to_have_text("paused")
    htmx_idle(page)
    row.locator("button:has-text('Resume')").click()
    expect(row.locator(".badge").first).to_have_text("active")
    expect(row.locator("button:has-text('Pause')")).to_be_visible()


def test_the_live_log_receives_events_from_another_page(page, server, context) -> None:
    log_in(page, server, "operator")
    log = context.new_page()
    log.goto(f"{server.url}/live/")
    expect(log.get_by_test_id("ws-state")).to_have_text("live")
    before = log.locator("tr.log-row").count()
    page.click("a.code:has-text('slow-report')")
    page.click("button:has-text('Run now')")
    expect(log.locator("tr.log-row")).to_have_count(before + 1, timeout=5000)
    expect(log.locator("tr.log-row").first).to_contain_text("slow-report")


def test_a_frame_of_batched_run_events_shows_a_row_for_each(
    page, server, django_db_blocker
) -> None:
    """A busy scheduler sends run events in batches, and the consumer answers a batch
    with one frame: the browser's htmx must swap every row of it, newest on top."""
    sockets = pass_sockets_through(page)
    log_in(page, server, "viewer")
    page.goto(f"{server.url}/live/")
    expect(page.get_by_test_id("ws-state")).to_have_text("live")
    batch = [event(pk) for pk in (9_000_001, 9_000_002, 9_000_003)]
    (frame,) = consumer_frames("/ws/runs/?view=log", batch, django_db_blocker)
    sockets[-1].send(frame)
    rows = page.locator('tr.log-row[data-run^="900000"]')  # not the server's own runs
    expect(rows).to_have_count(3)
    shown = [rows.nth(i).get_attribute("data-run") for i in range(3)]
    assert shown == ["9000003", "9000002", "9000001"]
    expect(rows.first).to_contain_text("batched-9000003")


def test_a_batch_of_new_and_changed_runs_reaches_the_runs_page_whole(
    page, server, django_db_blocker
) -> None:
    """The runs page gets new runs on top and its rows updated in place, from one batch:
    a frame that mixed the two lost one kind (the HTML parser reads a <tr> after a
    <tbody> as no row of a table)."""
    log_in(page, server, "operator")
    page.click("a.code:has-text('slow-report')")
    page.click("button:has-text('Run now')")  # a run the runs page shows
    sockets = pass_sockets_through(page)
    page.goto(f"{server.url}/runs/")
    rows = page.locator("tr.run-row")
    expect(rows.first).to_be_visible()
    for _ in range(100):  # the page's socket, through the route (a real browser's connect)
        if sockets:
            break
        page.wait_for_timeout(100)
    path = page.locator("#table").get_attribute("ws-connect")
    shown = int(rows.first.get_attribute("id").removeprefix("runrow-"))
    batch = [event(shown, status="failed", code="changed-here"), event(9_100_001)]
    for frame in consumer_frames(path, batch, django_db_blocker):
        sockets[-1].send(frame)
    expect(page.locator("#runrow-9100001")).to_be_visible()
    expect(page.locator(f"#runrow-{shown}")).to_contain_text("changed-here")
    expect(page.locator(f"#runrow-{shown}")).to_contain_text("failed")


def pass_sockets_through(page) -> list:
    """The page's run-event sockets, connected to the server as usual; a test can add
    frames of its own to them."""
    sockets = []

    def through(ws) -> None:
        ws.connect_to_server()  # the server's own frames still flow
        sockets.append(ws)

    page.route_web_socket(re.compile(r"/ws/runs/"), through)
    return sockets


def event(pk: int, *, status: str = "succeeded", code: str = ""):
    from django.utils import timezone

    from schedules.events import RunEvent

    now = timezone.now()
    return RunEvent(id=pk, schedule_id=None, schedule_code=code or f"batched-{pk}",
                    task_name="test.echo", status=status, reason="scheduled", attempt=1,
                    slot=now, queued_at=now, started_at=now, finished_at=now, duration_ms=3,
                    error="", scheduler="s")  # fmt: skip


def consumer_frames(path: str, events: list, django_db_blocker) -> list[str]:
    """What the product's consumer at `path` sends for one batch of these events."""
    # Playwright's loop holds this thread. The consumer reads no record, but Channels
    # checks the health of a database connection its threads may hold from earlier tests.
    # A layer of its own: on the production profile's Redis it would hear the server's
    # run events too (and the server this test's).
    alone = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    with (
        ThreadPoolExecutor(1) as aside,
        django_db_blocker.unblock(),
        override_settings(CHANNEL_LAYERS=alone),
    ):
        return aside.submit(asyncio.run, _consumer_frames(path, events)).result(timeout=30)


async def _consumer_frames(path: str, events: list) -> list[str]:
    from django.contrib.auth import get_user_model

    from schedules.events import publish_run_events
    from schedules.web.consumers import RunEventsConsumer

    comm = WebsocketCommunicator(RunEventsConsumer.as_asgi(), path)
    comm.scope["user"] = get_user_model()(username="root", is_superuser=True, is_active=True)
    assert (await comm.connect())[0]
    await publish_run_events(events)
    frames = [await comm.receive_from(timeout=5)]
    while not await comm.receive_nothing(timeout=0.5):
        frames.append(await comm.receive_from(timeout=5))
    await comm.disconnect()
    return frames


def test_orphans_and_duplicates_are_flagged_and_cannot_run(page, server, artifacts) -> None:
    log_in(page, server, "operator")
    for code, flag in (("ghost", "ORPHAN"), ("twin", "DUPLICATE")):
        row = page.locator("tr", has=page.locator("a.code", has_text=code))
        expect(row.locator(".flag")).to_contain_text(flag)
        expect(row.locator("button:has-text('Run now')")).to_be_disabled()
    expect(page.locator(".banner").first).to_be_visible()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(artifacts / "schedules-list.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(artifacts / "schedules-list-phone.png"), full_page=True)


def test_a_viewer_sees_no_operate_buttons(page, server) -> None:
    log_in(page, server, "viewer")
    expect(page.locator("a.code:has-text('slow-report')")).to_be_visible()
    expect(page.locator("button:has-text('Run now')")).to_have_count(0)
    expect(page.locator("button:has-text('Pause')")).to_have_count(0)
    page.click("a.code:has-text('slow-report')")
    expect(page.locator("button:has-text('Run now')")).to_have_count(0)


def test_compound_triggers_are_built_in_place(page, server, artifacts) -> None:
    log_in(page, server, "operator")
    page.goto(f"{server.url}/schedules/new/")
    page.fill("#id_code", "compound-demo")
    page.select_option("select[name=t-kind]", "any")
    expect(page.locator("select[name=t-0-kind]")).to_be_visible()
    htmx_idle(page)
    page.fill("input[name=t-0-expression]", "0 9 * * 1-5")
    page.click("button:has-text('+ Add a trigger')")
    expect(page.locator("select[name=t-1-kind]")).to_be_visible()
    expect(page.locator("input[name=t-0-expression]")).to_have_value("0 9 * * 1-5")
    htmx_idle(page)
    page.select_option("select[name=t-1-kind]", "interval")
    htmx_idle(page)
    page.fill("input[name=t-1-every]", "2")
    page.select_option("select[name=t-1-unit]", "hours")
    expect(page.get_by_test_id("preview-text")).to_have_text(
        "Any of: (At 09:00, Monday through Friday, UTC); (Every 2 hours)"
    )
    htmx_idle(page)
    page.click("#node-t-1 button:has-text('Remove')")
    expect(page.locator("select[name=t-1-kind]")).to_have_count(0)
    page.screenshot(path=str(artifacts / "edit-page.png"), full_page=True)
    page.click("button[type=submit]:has-text('Save')")
    expect(page.locator("dl.spec")).to_contain_text("Any of: (At 09:00, Monday through Friday")


def test_pages_work_under_the_content_security_policy(page, server) -> None:
    """No inline code: nothing the policy refuses, and the live log's schedule filter
    (once an inline onchange) still submits on change."""
    refused = []
    page.on("console", lambda message: refused.append(message.text)
            if "Content Security Policy" in message.text else None)  # fmt: skip
    log_in(page, server, "operator")
    page.goto(f"{server.url}/schedules/new/")
    page.select_option("select[name=t-kind]", "any")
    expect(page.locator("select[name=t-0-kind]")).to_be_visible()
    page.goto(f"{server.url}/live/")
    expect(page.get_by_test_id("ws-state")).to_have_text("live")
    option = page.locator("select[name=schedule] option").nth(1)
    value = option.get_attribute("value")
    page.select_option("select[name=schedule]", value)
    page.wait_for_url(re.compile(rf"/live/\?schedule={value}$"))
    assert refused == []


def test_a_code_of_200_characters_wraps_and_the_list_stays_in_the_page(page, server) -> None:
    """One such code made the table 2,876 px wide in a 1,280 px window (a fresh-user
    trial): every column but the first was off screen."""
    code = "x" * 200
    server.manage("schedules", "create", code, "--task", "test.echo", "--every", "3600")
    try:
        page.set_viewport_size({"width": 1280, "height": 800})
        log_in(page, server, "operator")
        expect(page.locator("a.code", has_text=code)).to_be_visible()
        table, window = page.evaluate(
            "[document.querySelector('table.schedules').getBoundingClientRect().right,"
            " window.innerWidth]"
        )
        assert table <= window
        row = page.locator("tr", has=page.locator("a.code", has_text=code))
        pause = row.locator("button:has-text('Pause')").bounding_box()
        assert pause is not None and pause["x"] + pause["width"] <= window
    finally:
        server.manage("schedules", "delete", code)
