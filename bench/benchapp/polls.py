"""The two simple peers' reads of the schedule table, apart from the benchmark
so that a test can check their query plans (tests/test_bench_report.py)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from schedules.models import Schedule

FIELDS = ("id", "code", "trigger", "next_run_at")


def every_record() -> QuerySet:
    """The naive design: every active schedule, due or not (a full scan)."""
    return Schedule.objects.filter(status="active").only(*FIELDS)


def due_records(now: datetime) -> QuerySet:
    """The indexed poll: `WHERE status = 'active' AND next_run_at <= now`, which the
    partial index schedule_due_idx (active schedules by next_run_at) answers. In the
    index's order: the model's default order (by code) would have SQLite scan the
    whole table through the code index instead."""
    due = Schedule.objects.filter(status="active", next_run_at__lte=now)
    return due.order_by("next_run_at").only(*FIELDS)
