"""Prometheus metrics, read from the database at scrape time.

The database is the one place that sees every scheduler and worker, so the
web process that answers the scrape reports for all of them. Run counts and
the duration and lateness histograms come from the run counters
(schedules/counters.py): monotonic, cumulative since the first run, never
lowered by deleting a schedule or pruning runs. Per-schedule series carry a
`schedule` label for at most SILLO_METRICS_MAX_SCHEDULES schedules (the first
ones counted); the others are summed under `schedule="_other"`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector

from .. import counter_totals
from ..choices import ERROR_OUTCOMES, RunStatus
from ..conf import metrics_label_limit, setting
from ..counters import DURATION_BUCKETS, INF, LATENESS_BUCKETS, exported_codes
from ..models import Incident, Schedule, SchedulerInstance
from ..selectors import runs_in_flight

OTHER = "_other"


def _cumulative(counts: dict[str, float], buckets) -> list[tuple[str, float]]:
    running, out = 0.0, []
    for bound in buckets:
        running += counts.get(str(bound), 0.0)
        out.append((str(float(bound)), running))  # Prometheus writes le="1.0", not "1"
    out.append((INF, running + counts.get(INF, 0.0)))
    return out


def _labels(limit: int) -> set[str]:
    """The codes with their own label: the first counted, then the first schedules."""
    labelled = exported_codes(limit)
    if len(labelled) < limit:
        for code in Schedule.objects.order_by("pk").values_list("code", flat=True)[:limit]:
            if len(labelled) >= limit:
                break
            labelled.add(code)
    return labelled


def _counter_rows(limit: int) -> tuple[set[str], list[tuple[str, str, float]]]:
    """(the labels, then (label, name, value) rows): each labelled schedule's counters,
    then the others' sums by name (counter_totals.read, not every counter read).

    The labels are read again after the counters: a schedule first counted between
    the two reads would be in `_other` once, then under its own label, and `_other`
    would fall (a reset to Prometheus). The labels grow as schedules are counted, so
    the same labels after the read held during it. A full set of labels (`limit`
    codes) cannot grow: it is not read again (a read of 800 counters at the default
    limit).
    """
    labelled = _labels(limit)
    for _ in range(3):
        rows, others = counter_totals.read(labelled)
        if len(labelled) >= limit:
            break
        again = _labels(limit)
        if again == labelled:
            break
        labelled = again
    return labelled, [*rows, *((OTHER, name, total) for name, total in sorted(others.items()))]


class SilloCollector(Collector):
    def collect(self) -> Iterator:
        now = timezone.now()
        stale_after = setting("SILLO_STALE_AFTER")
        labelled, counted = _counter_rows(metrics_label_limit()[0])

        def label(code: str) -> str:
            return code if code in labelled else OTHER

        # Summed per exported label.
        runs: dict[tuple[str, str], float] = defaultdict(float)
        hist: dict[str, dict[str, dict[str, float]]] = {
            "duration": defaultdict(dict),
            "lateness": defaultdict(dict),
        }
        sums: dict[str, dict[str, float]] = {
            "duration": defaultdict(float),
            "lateness": defaultdict(float),
        }
        claims: dict[str, float] = defaultdict(float)
        for key, name, value in counted:
            kind, _, rest = name.partition(":")
            if kind == "runs":
                runs[(key, rest)] += value
            elif kind in hist:
                bucket = hist[kind][key]
                bucket[rest] = bucket.get(rest, 0.0) + value
            elif name.endswith("_sum") and name[:-4] in sums:
                sums[name[:-4]][key] += value
            elif kind == "claims":
                claims[rest] += value

        executed = sum(v for (_, s), v in runs.items() if s != RunStatus.SKIPPED)
        errors = sum(v for (_, s), v in runs.items() if s in ERROR_OUTCOMES)
        yield CounterMetricFamily("sillo_runs", "Runs executed (not skipped)", value=executed)
        yield CounterMetricFamily(
            "sillo_run_errors", "Runs failed, timed out or interrupted", value=errors
        )
        by_status = CounterMetricFamily(
            "sillo_schedule_runs", "Runs by schedule and outcome", labels=["schedule", "status"]
        )
        for (code, status), value in sorted(runs.items()):
            by_status.add_metric([code, status], value)
        yield by_status

        yield CounterMetricFamily(
            "sillo_claims_lost",
            "Due slots a scheduler read and another claimed first (several schedulers)",
            value=claims["lost"],
        )
        yield CounterMetricFamily(
            "sillo_claim_conflicts",
            "Claimed slots that already had a run, skipped by the safety net (should be 0)",
            value=claims["conflict"],
        )

        in_flight = GaugeMetricFamily("sillo_runs_in_flight", "Runs now", labels=["status"])
        for status, n in runs_in_flight().items():
            in_flight.add_metric([status], n)
        yield in_flight

        for kind, buckets, doc in (
            ("duration", DURATION_BUCKETS, "Duration of finished runs"),
            ("lateness", LATENESS_BUCKETS, "Start minus slot of scheduled runs"),
        ):
            overall: dict[str, float] = defaultdict(float)
            family = HistogramMetricFamily(
                f"sillo_schedule_run_{kind}_seconds", f"{doc}, per schedule", labels=["schedule"]
            )
            for code, counts in sorted(hist[kind].items()):
                family.add_metric([code], _cumulative(counts, buckets), sums[kind][code])
                for bound, value in counts.items():
                    overall[bound] += value
            whole = HistogramMetricFamily(f"sillo_run_{kind}_seconds", doc)
            whole.add_metric([], _cumulative(overall, buckets), sum(sums[kind].values()))
            yield whole
            yield family

        yield from self._schedules(label, labelled)
        yield from self._instances(now, stale_after)

    def _schedules(self, label, labelled: set[str]) -> Iterator:
        schedules = GaugeMetricFamily("sillo_schedules", "Schedules, by status", labels=["status"])
        by_status = dict(Schedule.objects.values_list("status").annotate(n=Count("pk")))
        for status, n in sorted(by_status.items()):
            schedules.add_metric([status], n)
        yield schedules

        success = GaugeMetricFamily(
            "sillo_schedule_last_success_timestamp_seconds",
            "When the schedule last succeeded",
            labels=["schedule"],
        )
        failure = GaugeMetricFamily(
            "sillo_schedule_last_failure_timestamp_seconds",
            "When the schedule last failed",
            labels=["schedule"],
        )
        failures = GaugeMetricFamily(
            "sillo_schedule_consecutive_failures", "Final failures in a row", labels=["schedule"]
        )
        rows = Schedule.objects.filter(code__in=sorted(labelled)).values_list(
            "code", "last_success_at", "last_failure_at", "consecutive_failures"
        )
        for code, last_success, last_failure, in_a_row in sorted(rows):
            if last_success:
                success.add_metric([code], last_success.timestamp())
            if last_failure:
                failure.add_metric([code], last_failure.timestamp())
            failures.add_metric([code], in_a_row)
        yield success
        yield failure
        yield failures

        per_schedule = GaugeMetricFamily(
            "sillo_schedule_open_incidents", "Open incidents per schedule", labels=["schedule"]
        )
        per_kind = GaugeMetricFamily(
            "sillo_incidents_open", "Open incidents, by kind", labels=["kind"]
        )
        counts: dict[str, int] = defaultdict(int)
        kinds: dict[str, int] = defaultdict(int)
        for code, kind in Incident.objects.open().values_list("schedule_code", "kind"):
            counts[label(code)] += 1
            kinds[kind] += 1
        for code, n in sorted(counts.items()):
            per_schedule.add_metric([code], n)
        for kind, n in sorted(kinds.items()):
            per_kind.add_metric([kind], n)
        yield per_schedule
        yield per_kind

    def _instances(self, now, stale_after: float) -> Iterator:
        alive = GaugeMetricFamily(
            "sillo_instances_alive",
            "Schedulers and workers with a fresh heartbeat",
            labels=["kind"],
        )
        age = GaugeMetricFamily(
            "sillo_heartbeat_age_seconds",
            "Seconds since each live instance's heartbeat",
            labels=["instance", "kind"],
        )
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
