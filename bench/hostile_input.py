"""Hostile-input benchmark: the costliest requests a Viewer can send to the preview and the builder.

The lowest role may post any trigger to `POST /schedules/preview/` and
`/schedules/trigger-editor/`. Before the trigger limits and the search budget
(issue 12), nested `all` compounds cost 24.7 s of CPU for one small request and
a 998-field builder request answered 11.6 MB. Each candidate below is built to
be as costly as the limits allow (the deepest nesting, the widest compounds,
children that never fire together, the longest values, the most fields); each
is requested through Django's whole stack as a Viewer and measured in CPU time
(this process, `time.process_time`) and response size. Target: the worst costs
under 100 ms of CPU and returns under 200 KB. Not a test: nothing here asserts.

    python bench/hostile_input.py [--quick] [--json FILE]
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import benchmark_options, summary, write_results  # noqa: E402

WORKDIR = Path(tempfile.mkdtemp(prefix="sillo-bench-hostile-"))
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "sillo_dash.settings",
        "SILLO_DATA_DIR": str(WORKDIR),
        "DATABASE_URL": f"sqlite:///{WORKDIR / 'hostile.sqlite3'}",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "DJANGO_STATIC_ROOT": str(WORKDIR / "static"),
        "DJANGO_LOG_LEVEL": "ERROR",
    }
)

import django  # noqa: E402

django.setup()

from django.conf import settings as django_settings  # noqa: E402
from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from schedules.timing import limits as timing_limits  # noqa: E402
from schedules.validation import trigger_limits  # noqa: E402

HX = {"HTTP_HX_REQUEST": "true"}
# Wall-clock times that can never meet, in a zone with daylight saving (the costliest
# cron steps): every round of an `all` search moves past one of them.
NEVER = ["0 9 * * MON", "0 9 * * TUE", "30 9 * * WED", "15 10 * * THU", "45 8 * * FRI"]


def cron(prefix: str, expression: str) -> dict[str, str]:
    return {f"{prefix}-kind": "cron", f"{prefix}-expression": expression,
            f"{prefix}-tz": "Europe/Berlin"}  # fmt: skip


def nested_all(depth: int) -> dict[str, str]:
    """all(all(all(... MON, TUE), TUE), TUE): the review's CPU bomb, as deep as allowed."""
    fields: dict[str, str] = {}
    prefix = "t"
    for level in range(depth):
        fields[f"{prefix}-kind"] = "all"
        fields[f"{prefix}-count"] = "2"
        fields.update(cron(f"{prefix}-1", NEVER[1 + level % 4]))
        prefix = f"{prefix}-0"
    fields.update(cron(prefix, NEVER[0]))
    return fields


def wide_all(children: int) -> dict[str, str]:
    fields = {"t-kind": "all", "t-count": str(children)}
    for i in range(children):
        fields.update(cron(f"t-{i}", NEVER[i % len(NEVER)]))
    return fields


def all_of_anys(width: int, nodes: int) -> dict[str, str]:
    """all(any(20 crons), any(20 crons), ...) up to the node limit: each round asks every cron."""
    fields = {"t-kind": "all"}
    count, used = 0, 1
    while used + 1 + 2 <= nodes:
        branch = f"t-{count}"
        room = min(width, nodes - used - 1)
        fields[f"{branch}-kind"] = "any"
        fields[f"{branch}-count"] = str(room)
        for j in range(room):
            fields.update(cron(f"{branch}-{j}", f"{(count * 7 + j) % 60} 9 * * {count % 7}"))
        used += 1 + room
        count += 1
    fields["t-count"] = str(count)
    return fields


def longest_values(nodes: int, text: int) -> dict[str, str]:
    """As many nodes as allowed, each with values as long as allowed and an error to show."""
    fields = {"t-kind": "any", "t-count": str(nodes - 1)}
    for i in range(nodes - 1):
        fields[f"t-{i}-kind"] = "date"
        fields[f"t-{i}-at"] = "9" * (text + 1)
        fields[f"t-{i}-tz"] = "E" * (text + 1)
    return fields


def field_flood(fields_count: int) -> dict[str, str]:
    """The review's 998-field builder request."""
    fields = {"t-kind": "all", "t-count": "20"}
    for i in range((fields_count - 2) // 2):
        fields[f"t-{i}-kind"] = "any"
        fields[f"t-{i}-count"] = "20"
    return fields


def rarely_meeting() -> dict[str, str]:
    """all(Mondays, the 1st): it fires, a few times a year, after many search rounds."""
    return {"t-kind": "all", "t-count": "2", **cron("t-0", "0 9 * * MON"),
            **cron("t-1", "0 9 1 * *")}  # fmt: skip


def main() -> None:
    args = benchmark_options(__doc__, "fewer repetitions").parse_args()
    logging.getLogger("django.request").setLevel(logging.ERROR)  # the 400s are expected
    repeats = 5 if args.quick else 20
    call_command("migrate", verbosity=0)
    viewer = User.objects.create_user("viewer", password="a-long-bench-password")
    viewer.groups.add(Group.objects.get(name="Viewers"))
    client = Client()
    client.force_login(viewer)
    limits = trigger_limits()

    spent = [0]
    original = timing_limits.Meter.spend

    def counting(self, n: int) -> None:
        spent[0] += n
        original(self, n)

    timing_limits.Meter.spend = counting  # steps, beside the CPU time

    candidates = {
        f"nested all, depth {limits.max_depth}": nested_all(limits.max_depth),
        f"all of {limits.max_children} never-meeting crons": wide_all(limits.max_children),
        f"all of any-compounds, {limits.max_nodes} parts": all_of_anys(
            limits.max_children, limits.max_nodes
        ),
        f"{limits.max_nodes} parts, longest values": longest_values(
            limits.max_nodes, limits.max_text
        ),
        "all that meets rarely (Mondays the 1st)": rarely_meeting(),
        "998-field builder request": field_flood(998),
    }
    paths = {"preview": "/schedules/preview/", "builder": "/schedules/trigger-editor/"}
    results = {}
    for name, fields in candidates.items():
        for kind, path in paths.items():
            for _ in range(2):  # warm-up: caches, template loading
                client.post(path, fields, **HX)
            cpu, sizes, steps, statuses = [], [], [], set()
            for _ in range(repeats):
                spent[0] = 0
                began = time.process_time()
                response = client.post(path, fields, **HX)
                cpu.append((time.process_time() - began) * 1000)
                sizes.append(len(response.content))
                steps.append(spent[0])
                statuses.add(response.status_code)
            results[f"{kind}: {name}"] = {
                "cpu_ms": summary(cpu),
                "bytes": max(sizes),
                "steps": max(steps),
                "fields": len(fields),
                "status": sorted(statuses),
            }
            line = results[f"{kind}: {name}"]
            cpu_median, size = line["cpu_ms"]["median"], line["bytes"] / 1024
            print(f"{kind:8} {name:45} {cpu_median:7.1f} ms CPU {size:7.1f} KB "
                  f"{line['steps']:6} steps {line['status']}")  # fmt: skip
    worst_cpu = max(r["cpu_ms"]["median"] for r in results.values())
    worst_bytes = max(r["bytes"] for r in results.values())
    write_results(
        args.json,
        "hostile_input",
        {
            "quick": args.quick,
            "repeats": repeats,
            "limits": limits.__dict__,
            "builder_max_fields": getattr(django_settings, "SILLO_BUILDER_MAX_FIELDS", 400),
            # The review's figures for the same requests before the limits (issue 12).
            "before": {"cpu_ms": 24_700, "bytes": 11.6 * 2**20},
        },
        {"requests": results, "worst_cpu_ms": worst_cpu, "worst_bytes": worst_bytes},
    )
    print(f"worst: {worst_cpu:.1f} ms CPU, {worst_bytes / 1024:.1f} KB")


if __name__ == "__main__":
    main()
