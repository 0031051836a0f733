"""`manage.py demo`: a few demonstration schedules, so a new dashboard is alive."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from schedules import services
from schedules.models import Schedule

DEMO = [
    ("demo-heartbeat", "demo.heartbeat", {"kind": "interval", "every": 10}, {}, {}),
    ("demo-report", "demo.report", {"kind": "interval", "every": 30, "jitter": 5},
     {"region": "eu", "rows": 250}, {"timeout": 30}),
    ("demo-flaky", "demo.flaky", {"kind": "cron", "expression": "* * * * *", "tz": "UTC"},
     {"failure_rate": 0.5}, {"max_attempts": 3, "retry_delay": 2}),
    ("demo-slow", "demo.slow", {"kind": "interval", "every": 45}, {"seconds": 8},
     {"timeout": 5}),
    ("demo-weekday-9am", "demo.report",
     {"kind": "cron", "expression": "0 9 * * 1-5", "tz": "Europe/Berlin"}, {}, {}),
]  # fmt: skip


class Command(BaseCommand):
    help = "Create demonstration schedules (idempotent); they fire within a minute."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--if-empty", action="store_true", help="only on a database without schedules"
        )

    def handle(self, *args: object, if_empty: bool = False, **options: object) -> None:
        if if_empty and Schedule.objects.exists():
            return
        created = 0
        for code, task_name, trigger, kwargs, extra in DEMO:
            if Schedule.objects.filter(code=code).exists():
                continue
            services.schedule_create(
                code=code, task_name=task_name, trigger=trigger, kwargs=kwargs, **extra
            )
            created += 1
        self.stdout.write(f"demo schedules: {created} created, {len(DEMO) - created} kept")
