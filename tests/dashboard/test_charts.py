"""Charts over time: the list's outcome strips and the schedule page's 30 days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from schedules.models import Run, RunStatus
from schedules.web.charts import daily, history_charts, percentile
from tests.factories import every, make_schedule

T = datetime(2026, 6, 30, 12, 0, tzinfo=UTC)


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95)) == (50.0, 95.0)
    assert percentile([3.0], 95) == 3.0
    assert percentile([], 50) is None


def row(status, *, day: int, seconds: float = 1.0, late: float = 0.0):
    slot = T - timedelta(days=day)
    started = slot + timedelta(seconds=late)
    return (status, slot, started, started + timedelta(seconds=seconds), slot)


def test_days_count_rate_duration_and_lateness_in_the_operators_zone() -> None:
    rows = [
        row("succeeded", day=0, seconds=1, late=0.5),
        row("succeeded", day=0, seconds=3, late=1.5),
        row("failed", day=0, seconds=10, late=0.5),
        row("timed_out", day=1, seconds=60),
        row("skipped", day=1),
        row("succeeded", day=40),  # outside the window
    ]
    days = daily(rows, days=30, today=date(2026, 6, 30), zone=UTC)
    assert len(days) == 30 and days[-1].day == date(2026, 6, 30)
    today, yesterday = days[-1], days[-2]
    assert (today.runs, today.succeeded, today.errors) == (3, 2, 1)
    assert round(today.rate) == 67
    assert (today.p50, today.p95) == (3.0, 10.0)
    assert (today.late50, today.late95) == (0.5, 1.5)
    assert (yesterday.runs, yesterday.rate) == (2, 0.0)
    assert days[0].runs == 0 and days[0].rate is None


def test_charts_have_points_only_for_days_with_runs() -> None:
    charts = history_charts([row("succeeded", day=0, seconds=2), row("failed", day=2)],
                            now=T, zone=UTC)  # fmt: skip
    assert charts["has_runs"]
    assert [b.status for b in charts["rate"].bars] == ["bad", "ok"]
    (p50, p95) = charts["duration"].series
    assert len(p50.dots) == 2 and charts["duration"].top == 2.0


@pytest.mark.django_db
def test_the_list_shows_the_last_20_outcomes_oldest_first(client, viewer) -> None:
    schedule = make_schedule("nightly", "test.echo", every(60))
    now = timezone.now()
    made = [
        Run.objects.create(
            schedule=schedule,
            schedule_code="nightly",
            task_name="test.echo",
            reason="scheduled",
            queued_at=now - timedelta(minutes=25 - i),
            status=RunStatus.FAILED if i == 24 else RunStatus.SUCCEEDED,
        )  # fmt: skip
        for i in range(25)
    ]
    Run.objects.create(schedule=schedule, schedule_code="nightly", task_name="test.echo",
                       reason="manual", status=RunStatus.RUNNING)  # fmt: skip
    client.force_login(viewer)
    html = client.get("/").content.decode()
    strip = html.split('data-testid="strip">')[1].split("</div>")[0]
    assert strip.count('class="cell') == 20
    cells = strip.split("</span>")[:-1]
    assert cells[-1].startswith(f'<span class="cell o-failed" title="#{made[-1].pk} failed, ')
    assert f"#{made[5].pk} succeeded" in cells[0]  # the oldest of the last 20
    assert cells[-1].endswith(">✕") and all("o-succeeded" in c for c in cells[:-1])
    assert 'aria-label="Last 20 outcomes, oldest first: 19 succeeded, 1 failed"' in html


@pytest.mark.django_db
def test_the_schedule_page_charts_30_days_with_a_table(client, viewer) -> None:
    schedule = make_schedule("nightly", "test.echo", every(60))
    now = timezone.now()
    for days_ago, status in ((0, "succeeded"), (1, "failed"), (45, "succeeded")):
        at = now - timedelta(days=days_ago)
        Run.objects.create(
            schedule=schedule, schedule_code="nightly", task_name="test.echo",
            reason="scheduled", status=status, slot=at, queued_at=at,
            started_at=at + timedelta(seconds=2), finished_at=at + timedelta(seconds=5),
        )  # fmt: skip
    client.force_login(viewer)
    with CaptureQueriesContext(connection) as queries:
        html = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "<title>nightly · Sillo Dash</title>" in html
    assert "Last 30 days" in html
    assert html.count('role="img" aria-label="') >= 3
    assert "Success rate per day from" in html
    assert 'id="history-table"' in html
    assert "100% (1/1)" in html and "0% (0/1)" in html
    assert "3.000 / 3.000 s" in html  # duration p50 / p95
    assert "2.000 / 2.000 s" in html  # lateness
    assert sum("schedules_run" in q["sql"] for q in queries.captured_queries) < 10


@pytest.mark.django_db
@pytest.mark.parametrize("zone_name", ["UTC", "America/New_York"])
def test_the_days_are_counted_by_the_database_and_the_percentiles_read_a_bounded_sample(
    zone_name, monkeypatch
) -> None:
    """A schedule with more runs in its 30 days than the sample: every day's runs and
    success rate are the full count (as counting every row in Python gave), in the
    operator's zone; the rows read for the percentiles stay within the sample."""
    from zoneinfo import ZoneInfo

    from schedules import selectors
    from schedules.bulk import insert_rows
    from schedules.scheduler.records import new_run

    monkeypatch.setattr(selectors, "HISTORY_SAMPLE", 40)
    zone = ZoneInfo(zone_name)
    schedule = make_schedule("busy", "test.echo", every(60))
    beside = make_schedule("beside", "test.echo", every(60))
    runs = []
    for i in range(300):  # across the last 5 days, some errors, some skipped
        at = T - timedelta(minutes=23 * i)
        # Another schedule firing at the same times: the ids alternate between the two.
        for owner in (schedule, beside):
            run = new_run(owner, reason="scheduled", slot=at, now=at)
            run.status = ["succeeded", "succeeded", "failed", "skipped", "timed_out"][i % 5]
            run.started_at = at + timedelta(seconds=i % 7)
            run.finished_at = at + timedelta(seconds=9)
            runs.append(run)
    insert_rows(runs)

    with CaptureQueriesContext(connection) as queries:
        today = T.astimezone(zone).date()
        days = [today - timedelta(days=back) for back in range(29, -1, -1)]
        history = selectors.run_history(schedule, days=days, zone=zone)
    assert len(queries) <= 3  # counts, the sample, and the days it drew no run from
    assert history.every == 8 and 10 <= len(history.rows) <= 100

    everything = list(
        Run.objects.filter(schedule=schedule).values_list(
            "status", "slot", "started_at", "finished_at", "queued_at"
        )
    )
    counted = daily(history.rows, days=30, today=today, zone=zone, counts=history.counts)
    walked = daily(everything, days=30, today=today, zone=zone)
    assert [(d.day, d.runs, d.succeeded, d.errors, d.rate) for d in counted] == [
        (d.day, d.runs, d.succeeded, d.errors, d.rate) for d in walked
    ]
    assert sum(d.runs for d in counted) == 300
    assert all(d.p95 is not None for d in counted if d.runs)


@pytest.mark.django_db
def test_runs_on_day_boundaries_and_across_a_dst_change_count_on_their_own_day() -> None:
    """The day of a run (summed from its tallies) agrees with the operator's calendar at
    local midnight exactly, on a 23-hour day, and outside the 30 days."""
    from zoneinfo import ZoneInfo

    from schedules import selectors
    from schedules.bulk import insert_rows
    from schedules.scheduler.records import new_run

    zone = ZoneInfo("Europe/Berlin")  # summer time began on 2026-03-29
    today = date(2026, 4, 10)
    days = [today - timedelta(days=back) for back in range(29, -1, -1)]
    schedule = make_schedule("edges", "test.echo", every(60))
    midnights = [datetime.combine(day, datetime.min.time(), tzinfo=zone) for day in days]
    after_last = midnights[-1] + timedelta(days=1)
    moments = [
        *midnights,  # exactly on each day's start
        *(m - timedelta(microseconds=1) for m in midnights[1:]),  # the instant before it
        midnights[0] - timedelta(seconds=1),  # before the 30 days
        after_last,  # after them
        datetime(2026, 3, 29, 1, 59, tzinfo=zone),  # the short day's last winter minute
        datetime(2026, 3, 29, 3, 0, tzinfo=zone),  # its first summer minute
    ]
    runs = []
    for at in moments:
        run = new_run(schedule, reason="scheduled", slot=at, now=at)
        run.status, run.started_at, run.finished_at = "succeeded", at, at + timedelta(seconds=1)
        runs.append(run)
    insert_rows(runs)
    history = selectors.run_history(schedule, days=days, zone=zone)
    expected: dict[date, int] = {}
    for at in moments:
        day = at.astimezone(zone).date()
        if days[0] <= day <= days[-1]:
            expected[day] = expected.get(day, 0) + 1
    assert {day: count[0] for day, count in history.counts.items()} == expected
    assert expected[date(2026, 3, 29)] == 4  # its midnight, the instant before the next, 2
