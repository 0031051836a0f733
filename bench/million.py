"""One million schedules: idle CPU, scheduler memory, p99 lateness at 100 runs/s, the
list page and its search (issue 18 item 7).

1,000,000 interval schedules, each every 10,000 s with their slots spread evenly,
so 100 fall due each second, written to SQLite. Then this project's scheduler
starts with its defaults (runs in worker processes, the no-op worker task), in
a child process as bench/scheduler.py runs it:

- idle: nothing is due in the first windows: the scheduler process's CPU share
  (its process time over the wall time);
- steady: 100 runs/s after a warm-up, in windows: lateness inside the task (the
  slowest window's p99), and how many of the windows' slots ran;
- memory: the scheduler's resident memory, from before it started (the
  benchmark's own plan of a million slots already built) to its peak.

Then, over the same file, the schedules list through Django's whole request
handling as a superuser (as bench/dashboard.py does): its first page, a deep
page and a search for one schedule's code; server time and queries.

A full run only: writing a million records takes a minute or more, a fifth of
a quick run's five minutes. A quick run writes results that say so.

    python bench/million.py [--quick] [--json FILE] [--size N]
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import benchmark_options, write_results  # noqa: E402
from million_report import million_reading  # noqa: E402

SCHEDULES = 1_000_000
PAGES = {
    "first page": "/",
    "page 10,000": "/?page=10000",
    "search for one code": "/?q=s65432",
}
REPEATS = 5


def shape(schedules: int):
    from scheduler import Shape

    return Shape(idle_windows=2, idle_window=10.0, warmup=2.0, windows=3, window=4.0, bursts=0,
                 burst_every=0.0, idle_at=(schedules,), idle_systems=("sillo",))  # fmt: skip


def pages() -> dict:
    """The list's pages over the records the scheduler left, as a superuser."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from pages import measure

    call_command("collectstatic", verbosity=0, interactive=False)  # as a deployment does
    user = get_user_model().objects.create_superuser("bench", "bench@example.invalid", "x-1x")
    client = Client()
    client.force_login(user)
    return {name: measure(client, url, {}, REPEATS) for name, url in PAGES.items()}


def main() -> None:
    parser = benchmark_options(__doc__, quick="not run: the full run measures it")
    parser.add_argument("--size", type=int, default=SCHEDULES, help="schedules (a trial's)")
    args = parser.parse_args()
    settings = {"schedules": args.size, "database": "SQLite", "quick": args.quick}
    if args.quick:
        print("million: not run in a quick run (the full run measures it)", flush=True)
        write_results(args.json, "million", {**settings, "measured": False}, {})
        return
    # The pages are requested as Django's test client does, on a deployment's static files.
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    os.environ["DJANGO_STATIC_ROOT"] = tempfile.mkdtemp(prefix="sillo-bench-static-")
    from scheduler import RATE, one_run  # configures Django on the benchmark's SQLite file

    run = one_run("sillo", args.size, shape(args.size))
    settings |= {"rate": RATE, "shape": asdict(shape(args.size)), "repeats": REPEATS,
                 "measured": True}  # fmt: skip
    figures = {"scheduler": run, "pages": pages()}
    print(million_reading({"settings": settings, **figures}), flush=True)
    write_results(args.json, "million", settings, figures)


if __name__ == "__main__":
    main()
