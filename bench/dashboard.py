"""Dashboard benchmark: the schedules list at 10,000 schedules, beside the Django admin.

Writes 10,000 schedules of mixed status, task (some orphaned), trigger and last
outcome, with two runs each, and one schedule with 100,000 runs of its own
(a month of one every 30 s), into a new SQLite file, then requests each page
through Django's full request handling (middleware, view, template) as a
superuser: the server time of each request and the queries it made. The peer
is Django's admin changelist over the same records, the page every Django
project already has; the schedule page of the busy schedule, the runs page and
the live log's first render are measured beside the list. Not a test: nothing
here asserts.

    python bench/dashboard.py [--quick] [--json FILE]
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import SEED, benchmark_options, write_results  # noqa: E402
from pages import measure, product_pages  # noqa: E402

WORKDIR = Path(tempfile.mkdtemp(prefix="sillo-bench-dash-"))
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "sillo_dash.settings",
        "SILLO_DATA_DIR": str(WORKDIR),
        "DATABASE_URL": f"sqlite:///{WORKDIR / 'dashboard.sqlite3'}",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "DJANGO_STATIC_ROOT": str(WORKDIR / "static"),
        "DJANGO_LOG_LEVEL": "ERROR",
    }
)

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from schedules.bulk import insert_rows  # noqa: E402
from schedules.models import Run, Schedule  # noqa: E402
from schedules.scheduler.records import new_run  # noqa: E402
from schedules.timing import trigger_from_spec  # noqa: E402

SCHEDULES = 10_000
BUSY_RUNS = 100_000  # the runs of one schedule (a month of one every 30 s, not quite)
TASKS = ["demo.heartbeat", "demo.report", "demo.flaky", "demo.slow", "gone.task"]
TRIGGERS = [
    {"kind": "interval", "every": 60},
    {"kind": "interval", "every": 300, "jitter": 10},
    {"kind": "cron", "expression": "*/5 * * * *", "tz": "UTC"},
    {"kind": "cron", "expression": "0 9 * * 1-5", "tz": "Europe/Berlin"},
    {"kind": "cron", "expression": "0 0 L * *", "tz": "America/New_York"},
]
# Name -> (URL, extra headers), beside the product's pages (bench/pages.py).
ADMIN_PAGES = {
    "admin changelist, page 1": ("/admin/schedules/schedule/", {}),
    "admin changelist, page 100": ("/admin/schedules/schedule/?p=100", {}),
    "admin changelist, search": ("/admin/schedules/schedule/?q=nightly-1", {}),
    "admin changelist, status filter": ("/admin/schedules/schedule/?status__exact=paused", {}),
}


def populate() -> None:
    """10,000 schedules and 20,000 runs, the same every time (fixed seed)."""
    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)  # as a deployment does
    rng = random.Random(SEED)
    now = datetime.now(UTC)
    schedules = []
    for i in range(SCHEDULES):
        spec = rng.choice(TRIGGERS)
        status = rng.choices(["active", "paused", "cancelled"], [80, 15, 5])[0]
        schedules.append(
            Schedule(
                code=f"{rng.choice(['nightly', 'hourly', 'sync', 'report'])}-{i}",
                task_name=rng.choice(TASKS),
                trigger=spec,
                tz=spec.get("tz", "UTC"),
                status=status,
                next_run_at=trigger_from_spec(spec).next_fire(now) if status == "active" else None,
                last_run_at=now - timedelta(seconds=rng.randint(1, 3600)),
                last_outcome=rng.choices(["succeeded", "failed", "timed_out"], [90, 8, 2])[0],
                last_duration=rng.random() * 5,
                run_count=rng.randint(1, 10_000),
                error_count=rng.randint(0, 100),
            )
        )
    Schedule.objects.bulk_create(schedules, batch_size=2000)
    runs = [
        finished_run(schedule, now - timedelta(minutes=back))
        for schedule in Schedule.objects.all()
        for back in (1, 2)
    ]
    busy = Schedule.objects.create(
        code="busy", task_name=TASKS[0], trigger={"kind": "interval", "every": 30},
        next_run_at=now + timedelta(seconds=30), run_count=BUSY_RUNS,
    )  # fmt: skip
    runs += [
        finished_run(busy, now - timedelta(seconds=30 * back), "failed" if back % 50 == 0 else "")
        for back in range(BUSY_RUNS, 0, -1)
    ]
    insert_rows(runs)
    get_user_model().objects.create_superuser("bench", "bench@example.invalid", "not-used-1x")


def finished_run(schedule: Schedule, started: datetime, status: str = "") -> Run:
    """A scheduled run of `schedule` that started at `started` and took a second."""
    run = new_run(schedule, reason="scheduled", slot=started, now=started)
    run.status = status or "succeeded"
    run.started_at, run.finished_at = started, started + timedelta(seconds=1)
    return run


def main() -> None:
    parser = benchmark_options(__doc__, quick="fewer repetitions")
    args = parser.parse_args()
    repeats = 3 if args.quick else 20
    began = time.monotonic()
    populate()
    print(f"dashboard: {SCHEDULES} schedules written in {time.monotonic() - began:.1f}s; "
          f"median of {repeats} requests after 2 warm-up", flush=True)  # fmt: skip
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    pages = {}
    busy = Schedule.objects.get(code="busy").pk
    for name, (url, headers) in {**product_pages(busy, "nightly-1"), **ADMIN_PAGES}.items():
        pages[name] = row = measure(client, url, headers, repeats)
        ms, queries = row["server_ms"], row["queries"]
        print(
            f"  {name:34} {ms['median']:7.1f} ms [{ms['min']:.1f}-{ms['max']:.1f}]  "
            f"{queries['median']:.0f} queries  {row['bytes'] / 1024:.0f} KB",
            flush=True,
        )
    settings = {"schedules": SCHEDULES + 1, "runs": 2 * SCHEDULES + BUSY_RUNS, "repeats": repeats,
                "database": "SQLite (WAL)", "quick": args.quick}  # fmt: skip
    write_results(args.json, "dashboard", settings, {"pages": pages})


if __name__ == "__main__":
    main()
