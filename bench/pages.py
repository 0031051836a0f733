"""Timing a page through Django's whole request handling (middleware, view, template;
no network): the dashboard benchmarks share it. Needs Django set up."""

from __future__ import annotations

import time

from common import summary

WARM_UP = 2  # requests before the measured ones: templates compiled, caches filled


def measure(
    client, url: str, headers: dict, repeats: int, statuses: tuple[int, ...] = (200,)
) -> dict:
    """Server time (ms) and queries of `repeats` requests, the page's size and status
    (one of `statuses`: /health/ answers 503 while no scheduler is up, as fast)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(WARM_UP):
        response = client.get(url, headers=headers)
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
