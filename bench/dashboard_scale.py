"""The dashboard at issue 18's scale (item 8): 100,000 schedules and 10 million runs.

bench/run_log.py calls this on the log it filled (10,000 schedules with 1,000 runs
each), on each database:

1. `grow`: 90,000 more schedules (daily, none due while measured; one in five paused)
   and one schedule, "busy", with 100,000 finished runs over the last month;
2. `pages`: each of the product's pages (bench/pages.py) through Django's whole
   stack as a superuser, as bench/dashboard.py measures them at 10,000 schedules;
3. `load`: the same pages through the real server: run_log's steady phase starts
   `runscheduler --serve` (the single-process layout) and calls this with its port;
   20 users, each a thread of this process with its own connection, request the
   pages in turn with no pause until the phase ends, while the scheduler runs the
   10,000 schedules' 100 runs a second. The users share the machine's cores with
   the server and its workers.

Needs Django set up.
"""

from __future__ import annotations

import http.client
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from common import percentile
from pages import measure, product_pages

USERS = 20
EXTRA_SCHEDULES = 90_000
BUSY_RUNS = 100_000
BUSY_EVERY = 25.0  # seconds between the busy schedule's runs: 100,000 in 29 days
PAUSED_ONE_IN = 5
REPEATS = 10
SEARCH = "d4242"


def grow(add_runs: Callable[..., int]) -> int:
    """The extra schedules and the busy one's runs (by `add_runs`, run_log's writer);
    returns the busy schedule's id."""
    from schedule_records import insert_schedule_rows

    from schedules.models import Schedule

    far = time.time() + 10 * 86_400
    insert_schedule_rows(
        {f"d{i}": (far, 86_400.0) for i in range(EXTRA_SCHEDULES)}, "bench.noop_worker"
    )
    extra = Schedule.objects.filter(code__startswith="d").order_by("pk")
    paused = list(extra.values_list("pk", flat=True))[::PAUSED_ONE_IN]
    for low in range(0, len(paused), 5_000):  # within every backend's parameter limit
        chunk = paused[low : low + 5_000]
        Schedule.objects.filter(pk__in=chunk).update(status="paused", next_run_at=None)
    busy = Schedule.objects.create(
        code="busy", task_name="bench.noop_worker", kwargs={"code": "busy"},
        trigger={"kind": "interval", "every": 30}, next_run_at=datetime.fromtimestamp(far, UTC),
    )  # fmt: skip
    start = time.time() - BUSY_RUNS * BUSY_EVERY - 3600
    add_runs(BUSY_RUNS, start, schedules=1, first_id=busy.pk, code="busy", every=BUSY_EVERY)
    return busy.pk


def pages(busy: int) -> tuple[dict, str]:
    """Each page through Django's whole stack; and the superuser's session cookie."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    call_command("collectstatic", verbosity=0, interactive=False)  # as a deployment does
    logging.getLogger("axes").setLevel(logging.WARNING)  # a line per login is not a result
    user = get_user_model().objects.create_superuser("bench", "bench@example.invalid", None)
    client = Client()
    client.force_login(user)
    found = {
        name: measure(client, url, headers, REPEATS)
        for name, (url, headers) in product_pages(busy, SEARCH).items()
    }
    return found, client.cookies[settings.SESSION_COOKIE_NAME].value


def load(port: int, until: float, *, busy: int, cookie: str) -> dict:
    """USERS users requesting the pages in turn until `until` (epoch s): each page's
    response times at the user (ms) and the requests that failed."""
    from django.conf import settings

    urls = list(product_pages(busy, SEARCH).items())
    times: dict[str, list[float]] = {name: [] for name, _ in urls}
    failed: dict[str, int] = dict.fromkeys(times, 0)
    lock = threading.Lock()
    session = f"{settings.SESSION_COOKIE_NAME}={cookie}"

    def user(first: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        turn = first
        while time.time() < until:
            name, (url, headers) = urls[turn % len(urls)]
            turn += 1
            began = time.perf_counter()
            try:
                connection.request("GET", url, headers={**headers, "Cookie": session})
                response = connection.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                connection.close()  # reconnects on the next request
            elapsed = (time.perf_counter() - began) * 1000
            with lock:
                if ok:
                    times[name].append(elapsed)
                else:
                    failed[name] += 1
        connection.close()

    began = time.time()
    users = [threading.Thread(target=user, args=(i,)) for i in range(USERS)]
    for thread in users:
        thread.start()
    for thread in users:
        thread.join()
    return {
        "users": USERS,
        "from": began,
        "seconds": time.time() - began,
        "pages": {
            name: {
                "requests": len(values),
                "failed": failed[name],
                "p50_ms": percentile(values, 0.5) if values else None,
                "p99_ms": percentile(values, 0.99) if values else None,
            }
            for name, values in times.items()
        },
    }
