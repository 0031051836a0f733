"""GET /metrics: off by default, a bearer token, or public; numbers from the records."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from schedules import conf, counter_totals, counters
from schedules.checks import check_metrics_label_limit
from schedules.conf import DEFAULTS
from schedules.models import Run, RunCounter, Schedule, SchedulerInstance
from tests.factories import every, make_schedule, whole_table_reads

pytestmark = pytest.mark.django_db
TOKEN = "a-metrics-token-of-some-length"


def test_metrics_are_off_by_default(client) -> None:
    assert client.get("/metrics").status_code == 404


def test_a_token_is_required_in_token_mode(client, settings) -> None:
    settings.SILLO_METRICS, settings.SILLO_METRICS_TOKEN = "token", TOKEN
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_the_numbers_come_from_the_records(client, settings) -> None:
    settings.SILLO_METRICS = "public"
    now = timezone.now()
    schedule = make_schedule("m", "test.echo", every(60))
    SchedulerInstance.objects.create(id="s1", host="h", pid=1, heartbeat_at=now)
    finished = []
    for i, (late, status) in enumerate(((0.02, "succeeded"), (0.2, "succeeded"), (3.0, "failed"))):
        slot = now - timedelta(seconds=10 + i)
        finished.append(
            Run.objects.create(
                schedule=schedule,
                schedule_code="m",
                task_name="test.echo",
                reason="scheduled",
                status=status,
                slot=slot,
                started_at=slot + timedelta(seconds=late),
                finished_at=now,
            )
        )
    counters.tally(finished)  # as the scheduler counts them when it records the outcomes
    Run.objects.create(
        schedule=schedule,
        schedule_code="m",
        task_name="test.echo",
        reason="manual",
        status="queued",
    )
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert "sillo_runs_total 3.0" in text
    assert "sillo_run_errors_total 1.0" in text
    assert 'sillo_runs_in_flight{status="queued"} 1.0' in text
    assert 'sillo_runs_in_flight{status="running"} 0.0' in text
    assert 'sillo_schedules{status="active"} 1.0' in text
    assert 'sillo_instances_alive{kind="scheduler"} 1.0' in text
    assert 'sillo_run_lateness_seconds_bucket{le="0.025"} 1.0' in text
    assert 'sillo_run_lateness_seconds_bucket{le="0.25"} 2.0' in text
    assert "sillo_run_lateness_seconds_count 3.0" in text
    assert 'sillo_schedule_runs_total{schedule="m",status="failed"} 1.0' in text
    assert 'sillo_schedule_run_duration_seconds_count{schedule="m"} 3.0' in text


def test_counters_never_drop_and_histograms_are_cumulative(client, settings) -> None:
    settings.SILLO_METRICS = "public"
    now = timezone.now()
    schedule = make_schedule("gone", "test.echo", every(60))
    run = Run.objects.create(
        schedule=schedule,
        schedule_code="gone",
        task_name="test.echo",
        reason="manual",
        status="succeeded",
        started_at=now - timedelta(seconds=2),
        finished_at=now,
    )
    counters.tally([run])
    Run.objects.all().delete()
    schedule.delete()
    text = client.get("/metrics").content.decode()
    assert "sillo_runs_total 1.0" in text
    assert 'sillo_schedule_runs_total{schedule="gone",status="succeeded"} 1.0' in text
    assert 'sillo_run_duration_seconds_bucket{le="1.0"} 0.0' in text
    assert 'sillo_run_duration_seconds_bucket{le="5.0"} 1.0' in text
    assert 'sillo_run_duration_seconds_bucket{le="+Inf"} 1.0' in text


def test_schedules_past_the_label_limit_are_summed_under_other(client, settings) -> None:
    settings.SILLO_METRICS, settings.SILLO_METRICS_MAX_SCHEDULES = "public", 2
    now = timezone.now()
    runs = []
    for code in ("a", "b", "c", "d"):
        schedule = make_schedule(code, "test.echo", every(60))
        schedule.consecutive_failures = 2
        schedule.last_failure_at = now
        schedule.save()
        runs.append(
            Run.objects.create(
                schedule=schedule,
                schedule_code=code,
                task_name="test.echo",
                reason="manual",
                status="failed",
                started_at=now,
                finished_at=now,
            )
        )
        counters.tally(runs[-1:])
    text = client.get("/metrics").content.decode()
    assert 'sillo_schedule_runs_total{schedule="a",status="failed"} 1.0' in text
    assert 'sillo_schedule_runs_total{schedule="b",status="failed"} 1.0' in text
    assert 'sillo_schedule_runs_total{schedule="_other",status="failed"} 2.0' in text
    assert 'schedule="c"' not in text and 'schedule="d"' not in text
    assert 'sillo_schedule_consecutive_failures{schedule="a"} 2.0' in text
    assert "sillo_schedule_last_failure_timestamp_seconds{" in text


def test_the_schedules_past_the_limit_are_the_totals_less_the_labelled_not_every_counter(
    client, settings
) -> None:
    """Summing the others' counters read every one: 222 ms of a scrape at 100,000
    schedules with 7 counters each (SQLite). The totals are a few rows a name."""
    settings.SILLO_METRICS, settings.SILLO_METRICS_MAX_SCHEDULES = "public", 2
    step = counter_totals.in_steps(0.005)
    for i in range(40):  # an outcome batch each, as the scheduler counts them
        counters._add(
            {(f"s{i:02}", "runs:success"): 1.0, (f"s{i:02}", "duration:0.01"): 1.0,
             (f"s{i:02}", "duration_sum"): step}
        )  # fmt: skip
    with CaptureQueriesContext(connection) as captured:
        text = client.get("/metrics").content.decode()
    assert 'sillo_schedule_runs_total{schedule="_other",status="success"} 38.0' in text
    assert f'sillo_schedule_run_duration_seconds_sum{{schedule="_other"}} {38 * step}' in text
    assert 'sillo_schedule_runs_total{schedule="s00",status="success"} 1.0' in text
    table = RunCounter._meta.db_table
    fetched = [rows_of(q["sql"]) for q in captured.captured_queries if table in q["sql"]]
    # The labels, read once since the two fill the limit (a batch of counters by id:
    # 2 x FIRST_COUNTERS rows at most, of the 120), the two labelled schedules'
    # counters (6) and the totals (3 names).
    assert sum(fetched) <= 2 * counters.FIRST_COUNTERS + 6 + 3, fetched
    label_reads = [q for q in captured.captured_queries if f'"{table}"."id" >' in q["sql"]]
    assert len(label_reads) == 1, label_reads
    reads = [part for q in captured.captured_queries for part in q["sql"].split("UNION ALL")]
    summed = [sql for sql in reads if table in sql and ("GROUP BY" in sql or "SUM(" in sql)]
    assert not summed, summed  # no counter is aggregated: the labels group none either


@pytest.mark.parametrize(
    ("limit", "labelled", "said"),
    [(10, 3, "got 10; using 3"), (-1, 0, "got -1; using 0"), ("5", 2, "got '5'; using 2")],
)
def test_a_label_limit_out_of_range_is_bounded_and_said_at_start(
    client, settings, monkeypatch, limit, labelled, said
) -> None:
    """Each label is a name in one statement of the scrape, and SQLite binds at most
    32,766: an unbounded limit failed every scrape past that many schedules."""
    monkeypatch.setattr(conf, "MAX_METRICS_LABELS", 3)
    monkeypatch.setitem(DEFAULTS, "SILLO_METRICS_MAX_SCHEDULES", 2)
    settings.SILLO_METRICS, settings.SILLO_METRICS_MAX_SCHEDULES = "public", limit
    for code in "abcde":
        counters._add({(code, "runs:succeeded"): 1.0})
    text = client.get("/metrics").content.decode()
    shown = [code for code in "abcde" if f'{{schedule="{code}",' in text]
    assert shown == list("abcde"[:labelled])
    other = f'sillo_schedule_runs_total{{schedule="_other",status="succeeded"}} {5 - labelled}.0'
    assert other in text
    [warning] = [m for m in check_metrics_label_limit() if m.id == "schedules.W014"]
    assert said in warning.msg and "from 0 to 3" in warning.msg


def test_a_label_limit_in_range_says_nothing(settings) -> None:
    settings.SILLO_METRICS_MAX_SCHEDULES = 0
    assert check_metrics_label_limit() == []
    settings.SILLO_METRICS_MAX_SCHEDULES = conf.MAX_METRICS_LABELS
    assert check_metrics_label_limit() == []


def test_a_schedule_first_counted_during_a_scrape_is_not_in_other_first(
    client, settings, monkeypatch
) -> None:
    """Counted between the labels' read and the counters', it would be in `_other`
    for one scrape and under its own label the next: `_other` would fall."""
    settings.SILLO_METRICS, settings.SILLO_METRICS_MAX_SCHEDULES = "public", 5
    counters._add({("a", "runs:succeeded"): 1.0})
    read = counter_totals.read

    def counted_meanwhile(codes):
        if "b" not in codes:
            counters._add({("b", "runs:succeeded"): 1.0})  # another process commits
        return read(codes)

    monkeypatch.setattr(counter_totals, "read", counted_meanwhile)
    text = client.get("/metrics").content.decode()
    assert 'sillo_schedule_runs_total{schedule="b",status="succeeded"} 1.0' in text
    assert 'schedule="_other"' not in text


def test_the_labelled_schedules_are_the_first_counted_however_their_counters_grow(
    monkeypatch,
) -> None:
    """First seen, not busiest, and read in batches: a label never moves to `_other`."""

    def counted(*codes: str) -> None:  # one outcome batch: its counters created together
        counters._add({(code, name): 1.0 for code in codes for name in ("runs:x", "runs:y")})

    counted("b", "a")  # one batch, written in key order: a, then b
    counted("c")
    counted("a", "d")  # a's counters grow; d is new
    for code in ("e", "f", "g", "h", "i"):
        counted(code)
    assert counters.exported_codes(0) == set()
    assert counters.exported_codes(2) == {"a", "b"}
    assert counters.exported_codes(4) == {"a", "b", "c", "d"}
    assert counters.exported_codes(100) == set("abcdefghi")
    monkeypatch.setattr(counters, "FIRST_COUNTERS", 1)  # batches of one row a label
    assert counters.exported_codes(7) == set("abcdefg")


def test_a_scrape_reads_the_schedule_table_whole_once_for_the_status_counts(
    client, settings
) -> None:
    """Only the status gauge needs every schedule; the runs in flight come from their
    partial indexes (the run totals' sums over every schedule were read and dropped)."""
    settings.SILLO_METRICS = "public"
    make_schedule("a", "test.echo", every(60))
    make_schedule("b", "test.echo", every(60), status="paused")
    with CaptureQueriesContext(connection) as captured:
        text = client.get("/metrics").content.decode()
    assert 'sillo_schedules{status="paused"} 1.0' in text
    assert 'sillo_runs_in_flight{status="running"} 0.0' in text
    scans = whole_table_reads(captured.captured_queries, Schedule._meta.db_table)
    assert len(scans) == 1 and "GROUP BY" in scans[0], scans


def rows_of(sql: str) -> int:
    """How many rows a captured query returns, run again."""
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return len(cursor.fetchall())


def test_a_slot_left_to_the_pass_at_its_instant_is_no_claim_lost(monkeypatch) -> None:
    """A slot not yet due whose schedule is at max_instances is not claimed ahead: a peer
    that moves it meanwhile took nothing this scheduler tried for."""
    from schedules.models import RunCounter
    from schedules.registry import registry
    from schedules.scheduler import claims

    busy = make_schedule("busy", "test.echo", every(60))
    slot = busy.next_run_at
    earlier = slot - timedelta(seconds=60)
    Run.objects.create(schedule=busy, schedule_code="busy", task_name="test.echo",
                       reason="scheduled", status="running", slot=earlier)  # fmt: skip
    real_plan = claims._plan_schedule

    def peer_moves_it(schedule, *args, **kwargs):
        type(schedule).objects.filter(pk=schedule.pk).update(
            next_run_at=slot + timedelta(seconds=60)
        )
        return real_plan(schedule, *args, **kwargs)

    monkeypatch.setattr(claims, "_plan_schedule", peer_moves_it)
    runs, _ = claims.claim_due(
        now=slot - timedelta(seconds=0.03), due_by=slot + timedelta(seconds=0.02),
        instance_id="me", tasks=registry, limit=500, max_catch_up=10, local_in_flight={},
    )  # fmt: skip
    assert runs == []
    assert not RunCounter.objects.filter(name="claims:lost").exists()


def test_claims_lost_to_another_scheduler_and_safety_net_conflicts_are_counted(
    client, settings, monkeypatch
) -> None:
    """Both counts come from the claim itself: a slot another process moved after this
    one read it, and a claimed slot whose run already existed."""
    from schedules.registry import registry
    from schedules.scheduler import claims

    settings.SILLO_METRICS = "public"
    raced = make_schedule("raced", "test.echo", every(60))
    twin = make_schedule("twin", "test.echo", every(60))
    slot = raced.next_run_at
    assert twin.next_run_at == slot
    # The twin's slot already has its run (what a second claim of it would collide with).
    Run.objects.create(schedule=twin, schedule_code="twin", task_name="test.echo",
                       reason="scheduled", slot=slot)  # fmt: skip
    real_plan = claims._plan_schedule

    def peer_claims_raced_first(schedule, *args, **kwargs):
        if schedule.code == "raced":  # another scheduler moves it after this one read it
            type(schedule).objects.filter(pk=schedule.pk).update(
                next_run_at=slot + timedelta(seconds=60)
            )
        return real_plan(schedule, *args, **kwargs)

    monkeypatch.setattr(claims, "_plan_schedule", peer_claims_raced_first)
    runs, _ = claims.claim_due(
        now=slot + timedelta(seconds=1), instance_id="me", tasks=registry, limit=500,
        max_catch_up=10, local_in_flight={},
    )  # fmt: skip
    assert runs == []  # neither slot is this scheduler's to run
    assert Run.objects.filter(schedule_code="raced").count() == 0
    assert Run.objects.filter(schedule_code="twin").count() == 1
    text = client.get("/metrics").content.decode()
    assert "sillo_claims_lost_total 1.0" in text
    assert "sillo_claim_conflicts_total 1.0" in text
