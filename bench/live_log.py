"""Live views benchmark: 50 websocket clients, 500 run events a second (issue 18 item 9).

Starts a throwaway Redis (the channel layer that carries events between
processes in production) and a daphne server with the product's ASGI
application, then for each view connects 50 authenticated websocket clients
(a separate process) and announces run events at 500 a second through the
scheduler's own line of announcements, which sends them in batches (for the
list, each after counting the run on its schedule's record, `run_count`, as
recording an outcome does). The events go round the 50 schedules of one list
page:

- bare: a consumer that forwards each batch as JSON, no rendering (the floor
  that Channels, Redis and daphne set; bench/live_asgi.py); a frame per batch,
  and a client's events for a schedule arrive in publishing order (one channel
  per client), so the k-th is matched to the k-th event;
- live log: the live log page's stream (a row rendered from each event, a
  frame per batch), matched the same way;
- schedules list: the list page's stream for that page. A row is re-rendered
  from the database, and events that arrive while a row renders share the
  next render (docs/dashboard.md), so there are fewer messages than events:
  an event reaches a client with the first row of its schedule that counts
  it (the row's run count), and one no row counts is not delivered.

Delivered is the share of (event, client) pairs that arrived; delay is from
just before the event was counted (the list) and announced to its arrival. After a
warm-up, each window is a repetition. Not a test: nothing here asserts.

    python bench/live_log.py [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from common import (  # noqa: E402
    benchmark_options,
    free_port,
    percentile,
    summary,
    wait_for_port,
    write_results,
)

CLIENTS = 50  # issue 18 item 9: 50 clients at 500 events a second
RATE = 500.0
PAGE = 50  # schedules on one list page
VIEWS = {
    "bare (no rendering)": "/bench/bare/",
    "live log": "/ws/runs/?view=log",
    "schedules list": "/ws/runs/?view=list&schedules={page}",
}
# What names the event's schedule in each kind of message.
KEYS = [
    re.compile(r'"schedule_id": (\d+)'),
    re.compile(r'data-schedule="(\d+)"'),
    re.compile(r'id="schedule-row-(\d+)"'),
]
# The run count a list row shows (`run_count / error_count`): which events it reflects.
RUN_COUNT = re.compile(r'<td class="num">(\d+) / \d+</td>')
QUICK = {"warmup": 0.5, "windows": 2, "window": 1.5, "drain": 1.0}
FULL = {"warmup": 2.0, "windows": 5, "window": 4.0, "drain": 3.0}


# ---------------------------------------------------------------- clients (child process)


async def clients(url: str, origin: str, cookie: str, count: int, out: Path) -> None:
    """Hold `count` connections until stdin closes; write (client, schedule id, time,
    the run count a list row shows or None)."""
    from websockets.asyncio.client import connect

    received: list[tuple[int, int, float, int | None]] = []
    headers = {"Cookie": f"sessionid={cookie}"}
    sockets = [await connect(url, origin=origin, additional_headers=headers) for _ in range(count)]

    async def listen(index: int, ws) -> None:
        with contextlib.suppress(Exception):
            async for message in ws:
                at = time.time()
                # A frame carries a batch: every event of it, in order.
                for pattern in KEYS:
                    found = list(pattern.finditer(message))
                    for match in found:
                        counted = RUN_COUNT.search(message, match.end())
                        runs = int(counted.group(1)) if counted else None
                        received.append((index, int(match.group(1)), at, runs))
                    if found:
                        break

    listeners = [asyncio.create_task(listen(i, ws)) for i, ws in enumerate(sockets)]
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for ws in sockets:
        await ws.close()
    await asyncio.gather(*listeners)
    out.write_text(json.dumps(received))


# ---------------------------------------------------------------- the server side


def populate() -> str:
    """A superuser's session and one page of schedules; returns the session key."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from schedules.models import Schedule

    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)
    Schedule.objects.bulk_create(
        Schedule(
            code=f"event-{i}",
            task_name="demo.heartbeat",
            status="paused",
            trigger={"kind": "interval", "every": 3600},
        )  # fmt: skip
        for i in range(PAGE)
    )
    user = get_user_model().objects.create_superuser("bench", "bench@example.invalid", "x")
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def publish(schedule_ids: list[int], rate: float, count_runs: bool) -> list[float]:
    """A run event for each schedule id in turn at `rate` a second; when each was published
    (with `count_runs`, just before its run was counted on the schedule's record)."""
    from asgiref.sync import sync_to_async
    from django.db.models import F

    from schedules.models import Run, Schedule
    from schedules.scheduler.announcer import Announcer

    count = sync_to_async(
        lambda pk: Schedule.objects.filter(pk=pk).update(run_count=F("run_count") + 1)
    )
    announcer = Announcer()  # the scheduler's own line (batches, docs/dashboard.md)
    sent = []
    began = time.monotonic()
    for seq, schedule_id in enumerate(schedule_ids):
        await asyncio.sleep(max(0.0, began + seq / rate - time.monotonic()))
        now = datetime.now(UTC)
        run = Run(pk=seq + 1, schedule_id=schedule_id, schedule_code=f"event-{schedule_id}",
                  task_name="demo.heartbeat", status="succeeded", reason="scheduled", attempt=1,
                  slot=now, queued_at=now, started_at=now, finished_at=now)  # fmt: skip
        sent.append(time.time())
        if count_runs:
            await count(schedule_id)
        announcer.announce(run)
    await announcer.close(timeout=30)
    return sent


def one_view(path: str, port: int, cookie: str, schedule_ids: list[int], shape: dict) -> dict:
    rows = "view=list" in path  # rows rendered from the record: matched by their run count
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    origin = f"http://127.0.0.1:{port}"
    child = subprocess.Popen(
        [sys.executable, __file__, "--clients", f"ws://127.0.0.1:{port}{path}", origin, cookie,
         str(CLIENTS), str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    if child.stdout.readline().strip() != "ready":
        raise RuntimeError(f"clients of {path} did not connect")
    time.sleep(0.5)
    from schedules.models import Schedule

    Schedule.objects.update(run_count=0)  # a list row's count then numbers this view's events
    sent = asyncio.run(publish(schedule_ids, RATE, count_runs=rows))
    time.sleep(shape["drain"])
    child.stdin.close()
    child.wait(60)
    received = json.loads(out.read_text())
    out.unlink()

    # Per schedule, the times its events were published, in order; per (client,
    # schedule), the arrivals in order, each with the run count its row shows.
    published: dict[int, list[float]] = {}
    for schedule_id, at in zip(schedule_ids, sent, strict=True):
        published.setdefault(schedule_id, []).append(at)
    arrivals: dict[tuple[int, int], list[tuple[float, int | None]]] = {}
    for client, schedule_id, at, runs in received:
        arrivals.setdefault((client, schedule_id), []).append((at, runs))
    measured_from = sent[0] + shape["warmup"]
    windows: list[list[float]] = [[] for _ in range(shape["windows"])]
    delivered = 0
    for (_client, schedule_id), seen in arrivals.items():
        in_order = sorted(seen, key=lambda arrival: arrival[0])
        for when, at in reached(published.get(schedule_id, []), in_order, rows):
            index = int((when - measured_from) // shape["window"])
            if 0 <= index < shape["windows"]:
                windows[index].append(at - when)
                delivered += 1
    events = sum(1 for t in sent if measured_from <= t < measured_from + shape["windows"]
                 * shape["window"])  # fmt: skip
    return {
        "events": events,
        # The rate the publisher kept (it may fall behind RATE and then catch up).
        "published_per_s": (len(sent) - 1) / (sent[-1] - sent[0]) if len(sent) > 1 else None,
        "delivered": delivered / (events * CLIENTS) if events else None,
        "delay_p50_ms": summary(percentile(w, 0.5) * 1000 if w else None for w in windows),
        "delay_p99_ms": summary(percentile(w, 0.99) * 1000 if w else None for w in windows),
        "delay_max_ms": summary(max(w) * 1000 if w else None for w in windows),
    }


def reached(published: list[float], arrivals: list[tuple[float, int | None]], rows: bool):
    """(published, arrived) of each of a schedule's events that reached one client.

    A message per event: the k-th arrival is the k-th event. A list row (`rows`): the
    k-th event arrives with the first row whose run count is k or more."""
    if not rows or not arrivals:
        return list(zip(published, (at for at, _ in arrivals), strict=False))
    pairs, rows = [], iter(arrivals)
    at, runs = next(rows)
    for k, when in enumerate(published, start=1):
        while (runs or 0) < k:
            following = next(rows, None)
            if following is None:
                return pairs  # no row counts this event, or any later one
            at, runs = following
        pairs.append((when, at))
    return pairs


def main() -> None:
    parser = benchmark_options(__doc__, quick="shorter windows")
    parser.add_argument("--clients", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.clients:
        url, origin, cookie, count, out = args.clients
        asyncio.run(clients(url, origin, cookie, int(count), Path(out)))
        return

    from tests.production_profile import redis

    shape = QUICK if args.quick else FULL
    events = int(RATE * (shape["warmup"] + shape["windows"] * shape["window"]))
    workdir = Path(tempfile.mkdtemp(prefix="sillo-bench-live-"))
    print(f"live views: {CLIENTS} clients, {RATE:.0f} events/s, {shape}", flush=True)
    with redis() as (redis_url, _pid):
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "sillo_dash.settings",
            "SILLO_DATA_DIR": str(workdir),
            "DATABASE_URL": f"sqlite:///{workdir / 'live.sqlite3'}",
            "REDIS_URL": redis_url,
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_STATIC_ROOT": str(workdir / "static"),
            "DJANGO_LOG_LEVEL": "ERROR",
            "PYTHONPATH": f"{BENCH.parent}{os.pathsep}{BENCH}",
        }
        os.environ.update(env)
        import django

        django.setup()
        cookie = populate()
        from schedules.models import Schedule

        page = list(Schedule.objects.order_by("pk").values_list("pk", flat=True))
        schedule_ids = [page[seq % len(page)] for seq in range(events)]
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
             "live_asgi:application"],
            env=env, cwd=BENCH, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_for_port(port, server)
            views = {}
            for name, path in VIEWS.items():
                path = path.format(page=",".join(map(str, page)))
                views[name] = row = one_view(path, port, cookie, schedule_ids, shape)
                p99 = row["delay_p99_ms"]
                print(
                    f"  {name:22} delivered {100 * (row['delivered'] or 0):.1f}% of "
                    f"{row['events']} x {CLIENTS}, delay p99 "
                    f"{p99['median'] if p99 else float('nan'):.1f} ms",
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(30)
    settings = {"clients": CLIENTS, "rate": RATE, "layer": "channels_redis",
                "server": "daphne", "shape": shape, "quick": args.quick}  # fmt: skip
    write_results(args.json, "live_log", settings, {"views": views})


if __name__ == "__main__":
    main()
