"""Chains in a real browser: the run page's chain grows live as follow-ups run."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import rarely

from .conftest import log_in

pytestmark = pytest.mark.slow


def test_the_chain_shows_live_on_the_run_page(page, server, context, artifacts) -> None:
    server.schedules(
        [
        ("chain-c", "test.fail", rarely(), {"kwargs": {"message": "step three broke"}}),
        ("chain-rescue", "test.echo", rarely(), {}),
        ("chain-b", "test.sleep", rarely(), {"kwargs": {"seconds": 1.0}, "then": ["chain-c"]}),
        ("chain-a", "test.sleep", rarely(), {"kwargs": {"seconds": 1.0}, "then": ["chain-b"]}),
    ])  # fmt: skip
    server.python(
        "from schedules import services\n"
        "services.schedule_update(schedule=services.Schedule.objects.get(code='chain-c'), "
        "trigger=services.Schedule.objects.get(code='chain-c').trigger, catch=['chain-rescue'])"
    )
    log_in(page, server, "operator")
    log = context.new_page()
    log.goto(f"{server.url}/live/")
    expect(log.get_by_test_id("ws-state")).to_have_text("live")
    run_id = server.python(
        "from schedules import services\n"
        "print(services.schedule_run_now(schedule=services.Schedule.objects.get(code='chain-a')).pk)"
    ).split()[-1]  # the shell's banner comes first
    assert run_id.isdigit(), run_id
    page.goto(f"{server.url}/runs/{run_id}/")
    page.evaluate("window.chainPageLoaded = true")  # gone if the page reloaded
    chain = page.get_by_test_id("run-chain")
    expect(chain).to_have_attribute("data-live", "on")
    # The follow-ups appear as they are queued, then their outcomes, without a reload.
    expect(chain.locator("[data-status]", has_text="chain-b").first).to_be_visible(timeout=15000)
    expect(chain.locator("li", has_text="chain-c").last).to_have_attribute(
        "data-status", "failed", timeout=15000
    )
    rescue = chain.locator("li[data-status]", has_text="chain-rescue").last
    expect(rescue).to_have_attribute("data-status", "succeeded", timeout=15000)
    expect(rescue.locator(".chain-kind").first).to_have_text("catch")
    expect(chain.locator("li", has_text="chain-b").first.locator(".chain-kind").first).to_have_text(
        "then"
    )
    expect(chain.get_by_test_id("chain-live")).to_have_count(0)
    assert page.evaluate("window.chainPageLoaded") is True
    page.screenshot(path=str(artifacts / "run-chain.png"), full_page=True)

    # The live log marks the chained runs, and the schedule page shows both directions.
    expect(log.get_by_test_id("chained").first).to_be_visible()
    page.goto(f"{server.url}/")
    page.click("a.code:has-text('chain-b')")
    links = page.get_by_test_id("schedule-chain")
    expect(links).to_contain_text("Runs after: chain-a then")
    expect(links.locator("li", has_text="chain-c").first).to_contain_text("then")
    expect(links).to_contain_text("chain-rescue")
