"""Alerts in a real browser: the header's live incident count, rules and a test notification."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.alerts.receiver import Receiver
from tests.e2e.conftest import Site, rarely

from .conftest import htmx_idle, log_in, serve

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory, receiver):
    """`runscheduler --serve` with quick alert sweeps and a webhook channel to a local receiver."""
    site = Site(tmp_path_factory.mktemp("alerts"))
    site.env.update(
        DJANGO_SECURE_COOKIES="false", SILLO_ALERT_CHECK_INTERVAL="0.5", SILLO_NOTIFY_POLL="0.2"
    )
    site.manage("collectstatic", "--noinput", "-v0")
    site.add_user("operator", "Editors")
    site.add_user("viewer", "Viewers")
    site.schedules([("report", "test.echo", rarely(), {})])
    site.python(
        "from schedules.models import Channel\n"
        f"Channel.objects.create(name='local hook', kind='webhook', url='{receiver.url}/hook')"
    )
    process = serve(site)
    yield site
    site.stop(process)


def test_the_incident_count_in_the_header_updates_live(page, server) -> None:
    log_in(page, server, "viewer")
    count = page.get_by_test_id("incident-count")
    expect(count).to_have_text("0")
    server.python(
        "from schedules import services; from django.utils import timezone\n"
        "from schedules.models import Schedule\n"
        "s = services.schedule_create(code='breaks', task_name='test.fail',"
        " trigger={'kind': 'interval', 'every': 3600})\n"
        "Schedule.objects.filter(pk=s.pk).update(next_run_at=timezone.now())"
    )
    expect(count).to_have_text("1", timeout=15000)  # no reload: pushed over the websocket
    page.click("a:has-text('Incidents')")
    expect(page.get_by_test_id("incident-failing")).to_contain_text("breaks")


def test_an_editor_sets_alert_rules_and_sends_a_test_notification(
    page, server, receiver, artifacts
) -> None:
    log_in(page, server, "operator")
    page.click("a.code:has-text('report')")
    page.click("a:has-text('Edit alert rules')")
    page.fill("#id_pause_after", "4")
    page.fill("#id_repeat_every", "3600")
    page.check("#id_notify_override")
    page.check("input[name=notify][value=failed]")
    page.check("input[name=notify][value=late]")
    page.click("button:has-text('Save rules')")
    rules = page.get_by_test_id("effective-rules")
    expect(rules.locator("[data-rule=pause_after]")).to_have_text("4")
    expect(rules.locator("[data-rule=notify]")).to_have_text("failed, late")
    page.click("button:has-text('Send test notification')")
    expect(page.get_by_test_id("test-answers")).to_contain_text("local hook: sent — HTTP 200")
    htmx_idle(page)
    page.screenshot(path=str(artifacts / "alert-rules.png"), full_page=True)
    assert [r["json"]["event"] for r in receiver.requests][-1] == "test"
    assert receiver.requests[-1]["json"]["schedule"] == "report"


def test_a_viewer_sees_the_rules_but_no_edit_or_test_buttons(page, server) -> None:
    log_in(page, server, "viewer")
    page.click("a.code:has-text('report')")
    expect(page.get_by_test_id("effective-rules")).to_be_visible()
    expect(page.locator("a:has-text('Edit alert rules')")).to_have_count(0)
    expect(page.locator("button:has-text('Send test notification')")).to_have_count(0)
