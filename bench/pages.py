"""Timing a page through Django's whole request handling (middleware, view, template;
no network): the dashboard benchmarks share it. Needs Django set up."""

from __future__ import annotations

import gc
import time

from common import summary

WARM_UP = 2  # requests before the measured ones: templates compiled, caches filled
# The product's pages, name -> (URL, extra headers): {busy} is the id of the schedule with
# 100,000 runs, whose code is "busy"; {search} a code to search for; {deep} the cursor
# its run history's link "Older" carries to page 100.
PRODUCT_PAGES = {
    "list, page 1": ("/", {}),
    "list, page 100": ("/?page=100", {}),
    "list, search": ("/?q={search}", {}),
    "list, status filter": ("/?status=paused", {}),
    "list, table only (htmx)": ("/?page=2", {"HX-Request": "true"}),
    "schedule page, 100,000 runs": ("/schedules/{busy}/", {}),
    "schedule page, its runs page 100 (htmx)": (
        "/schedules/{busy}/?cursor={deep}",
        {"HX-Request": "true"},
    ),
    "runs page": ("/runs/", {}),
    "runs page, the busy schedule's failures": ("/runs/?schedule=busy&status=failed", {}),
    "live log, first render": ("/live/", {}),
}


def product_pages(busy: int, search: str) -> dict[str, tuple[str, dict]]:
    """PRODUCT_PAGES with their URLs filled in."""
    deep = history_cursor(busy, page=100)
    return {
        name: (url.format(busy=busy, search=search, deep=deep), headers)
        for name, (url, headers) in PRODUCT_PAGES.items()
    }


def history_cursor(schedule_id: int, *, page: int) -> str:
    """The cursor of a schedule's run history page (as following "Older" gets to it)."""
    from schedules.models import Run
    from schedules.run_filters import encode_cursor
    from schedules.web.views.schedule_detail import RUNS_PER_PAGE

    runs = Run.objects.for_schedule(schedule_id)
    before = runs[(page - 1) * RUNS_PER_PAGE - 1 : (page - 1) * RUNS_PER_PAGE]
    return encode_cursor(before[0]) if before else ""


def measure(
    client, url: str, headers: dict, repeats: int, statuses: tuple[int, ...] = (200,)
) -> dict:
    """Server time (ms) and queries of `repeats` requests, the page's size and status
    (one of `statuses`: /health/ answers 503 while no scheduler is up, as fast)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(WARM_UP):
        response = client.get(url, headers=headers)
    # As the product's servers do at start (sillo_dash/asgi.py, runscheduler): what lives
    # as long as the process is out of the collector's sight. Otherwise a full collection
    # walks this process's benchmark data too, and its pause reads as the page's.
    gc.freeze()
    assert response.status_code in statuses, (url, response.status_code)
    times, queries = [], []
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as captured:
            began = time.perf_counter()
            response = client.get(url, headers=headers)
            times.append((time.perf_counter() - began) * 1000)
        queries.append(len(captured))
    return {
        "server_ms": summary(times),
        "queries": summary(queries),
        "bytes": len(response.content),
        "status": response.status_code,
    }
