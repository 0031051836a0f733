"""Prometheus metrics, read from the database at scrape time.

The database is the one place that sees every scheduler and worker, so the
web process that answers the scrape reports for all of them. Lateness and
duration are histograms of the runs finished in the last SILLO_METRICS_WINDOW
seconds (a sliding window, not a process-lifetime counter).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector

from ..conf import setting
from ..models import Run, RunReason, Schedule, SchedulerInstance
from ..selectors import run_totals

LATENESS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)


def _histogram(
    name: str, documentation: str, values: list[float], buckets
) -> HistogramMetricFamily:
    counts = [sum(1 for v in values if v <= bound) for bound in buckets]
    family = HistogramMetricFamily(name, documentation)
    family.add_metric(
        [],
        buckets=[(str(b), c) for b, c in zip(buckets, counts, strict=True)]
        + [("+Inf", len(values))],
        sum_value=sum(values),
    )
    return family


class SilloCollector(Collector):
    def collect(self) -> Iterator:
        now = timezone.now()
        stale_after = setting("SILLO_STALE_AFTER")
        window = setting("SILLO_METRICS_WINDOW")

        totals = run_totals()
        yield CounterMetricFamily("sillo_runs", "Runs executed", value=totals["total"])
        yield CounterMetricFamily(
            "sillo_run_errors", "Runs failed, timed out or interrupted", value=totals["errors"]
        )
        in_flight = GaugeMetricFamily("sillo_runs_in_flight", "Runs now", labels=["status"])
        for status in ("running", "queued"):
            in_flight.add_metric([status], totals[status])
        yield in_flight

        schedules = GaugeMetricFamily("sillo_schedules", "Schedules, by status", labels=["status"])
        by_status = dict(Schedule.objects.values_list("status").annotate(n=Count("pk")))
        for status, n in sorted(by_status.items()):
            schedules.add_metric([status], n)
        yield schedules

        alive = GaugeMetricFamily(
            "sillo_instances_alive",
            "Schedulers and workers with a fresh heartbeat",
            labels=["kind"],
        )
        age = GaugeMetricFamily(
            "sillo_heartbeat_age_seconds", "Seconds since each live instance's heartbeat",
            labels=["instance", "kind"],
        )  # fmt: skip
        fresh = {"scheduler": 0, "worker": 0}
        for instance in SchedulerInstance.objects.filter(stopped_at__isnull=True):
            seconds = (now - instance.heartbeat_at).total_seconds()
            age.add_metric([instance.id, instance.kind], seconds)
            if seconds <= stale_after:
                fresh[instance.kind] = fresh.get(instance.kind, 0) + 1
        for kind, n in fresh.items():
            alive.add_metric([kind], n)
        yield alive
        yield age

        recent = Run.objects.filter(
            finished_at__gte=now - timedelta(seconds=window), started_at__isnull=False
        ).values_list("reason", "slot", "started_at", "finished_at")
        lateness, durations = [], []
        for reason, slot, started, finished in recent:
            durations.append((finished - started).total_seconds())
            if reason == RunReason.SCHEDULED and slot is not None:
                lateness.append(max(0.0, (started - slot).total_seconds()))
        yield _histogram(
            "sillo_run_lateness_seconds",
            f"Start minus slot of scheduled runs finished in the last {window:g}s",
            lateness,
            LATENESS_BUCKETS,
        )
        yield _histogram(
            "sillo_run_duration_seconds",
            f"Duration of runs finished in the last {window:g}s",
            durations,
            DURATION_BUCKETS,
        )
