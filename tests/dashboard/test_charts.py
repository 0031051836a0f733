"""Charts over time: the list's outcome strips and the schedule page's 30 days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from schedules.models import Run, RunStatus
from schedules.run_history import RunHistory
from schedules.web.charts import daily, history_charts, percentile
from tests.factories import every, make_schedule

T = datetime(2026, 6, 30, 12, 0, tzinfo=UTC)


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95)) == (50.0, 95.0)
    assert percentile([3.0], 95) == 3.0
    assert percentile([], 50) is None


def walked(rows, days: list[date], zone) -> RunHistory:
    """What the page should show, from every run (status, slot, started, finished,
    queued): the day of a run is when it started (or was queued), in `zone`."""
    history = RunHistory(days, {}, {}, {}, sampled=False)
    for status, slot, started, finished, queued in rows:
        day = (started or queued).astimezone(zone).date()
        if day not in days:
            continue
        runs, succeeded, errors = history.counts.get(day, (0, 0, 0))
        succeeded += status == RunStatus.SUCCEEDED
        errors += status in (RunStatus.FAILED, RunStatus.TIMED_OUT)
        history.counts[day] = (runs + 1, succeeded, errors)
        if started and finished:
            history.durations.setdefault(day, []).append((finished - started).total_seconds())
        if started and slot:
            late = max(0.0, (started - slot).total_seconds())
            history.lateness.setdefault(day, []).append(late)
    return history


def test_days_show_counts_rate_and_nearest_rank_percentiles() -> None:
    days = [date(2026, 6, 28), date(2026, 6, 29), date(2026, 6, 30)]
    history = RunHistory(
        days,
        counts={days[2]: (4, 2, 1), days[1]: (2, 0, 1), days[0]: (1, 0, 0)},  # 1 skipped
        durations={days[2]: [1.0, 3.0, 10.0], days[1]: [60.0]},
        lateness={days[2]: [0.5, 1.5, 0.5]},
        sampled=False,
    )
    oldest, yesterday, today = daily(history)
    assert (today.runs, today.succeeded, today.errors) == (4, 2, 1)
    assert round(today.rate) == 67  # successes among runs with an outcome
    assert (today.p50, today.p95) == (3.0, 10.0)
    assert (today.late50, today.late95) == (0.5, 1.5)
    assert (yesterday.runs, yesterday.rate, yesterday.late50) == (2, 0.0, None)
    assert oldest.runs == 1 and oldest.rate is None and oldest.p50 is None


def test_charts_have_points_only_for_days_with_runs() -> None:
    days = [T.date() - timedelta(days=back) for back in range(29, -1, -1)]
    history = RunHistory(
        days, {days[-1]: (1, 1, 0), days[-3]: (1, 0, 1)}, {days[-1]: [2.0], days[-3]: [1.0]},
        {}, sampled=False,
    )  # fmt: skip
    charts = history_charts(history)
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


def every_run(schedule) -> list[tuple]:
    return list(
        Run.objects.filter(schedule=schedule).values_list(
            "status", "slot", "started_at", "finished_at", "queued_at"
        )
    )


def finished_runs(schedule, moments, *, seconds=lambda at, i: 9.0, status=lambda i: "succeeded"):
    from schedules.bulk import insert_rows
    from schedules.scheduler.records import new_run

    runs = []
    for i, at in enumerate(moments):
        run = new_run(schedule, reason="scheduled", slot=at, now=at)
        run.status = status(i)
        run.started_at = at + timedelta(seconds=i % 7)
        run.finished_at = run.started_at + timedelta(seconds=seconds(at, i))
        runs.append(run)
    insert_rows(runs)


@pytest.mark.django_db
@pytest.mark.parametrize("zone_name", ["UTC", "America/New_York"])
def test_the_days_are_counted_by_the_database_and_the_percentiles_read_stretches(
    zone_name, monkeypatch
) -> None:
    """A schedule with more runs a day than the sample: every day's runs and success
    rate are the full count (as counting every row in Python gave), in the operator's
    zone; a busy day's percentiles read stretches of its runs, a quiet day all of them,
    in two queries."""
    from zoneinfo import ZoneInfo

    from schedules import run_history

    monkeypatch.setattr(run_history, "SAMPLE_PER_DAY", 40)
    monkeypatch.setattr(run_history, "STRETCHES", 4)
    zone = ZoneInfo(zone_name)
    schedule = make_schedule("busy", "test.echo", every(60))
    beside = make_schedule("beside", "test.echo", every(60))
    moments = [T - timedelta(minutes=7 * i) for i in range(600)]  # 200 a day, 3 days
    moments += [T - timedelta(days=5, minutes=i) for i in range(30)]  # a quiet day
    outcomes = ["succeeded", "succeeded", "failed", "skipped", "timed_out"]
    for owner in (schedule, beside):  # ids alternate: another schedule at the same times
        finished_runs(owner, moments, status=lambda i: outcomes[i % 5])

    with CaptureQueriesContext(connection) as queries:
        today = T.astimezone(zone).date()
        days = [today - timedelta(days=back) for back in range(29, -1, -1)]
        history = run_history.run_history(schedule, days=days, zone=zone)
    assert len(queries) == 2  # the tallies, and one read of every stretch
    assert history.sampled

    whole = walked(every_run(schedule), days, zone)
    counted, expected = daily(history), daily(whole)
    assert [(d.day, d.runs, d.succeeded, d.errors, d.rate) for d in counted] == [
        (d.day, d.runs, d.succeeded, d.errors, d.rate) for d in expected
    ]
    assert sum(d.runs for d in counted) == 630
    for day in expected:
        read = len(history.durations.get(day.day, []))
        started = len(whole.durations.get(day.day, []))  # the others were skipped
        if day.runs > 40:  # about 4 stretches of 10: what a quarter holds is spread evenly
            assert 20 <= read <= 60, (day.day, day.runs, read)
        elif day.runs:  # read whole, so its percentiles are exact
            assert read >= started - 1
    quiet = next(d for d in counted if d.runs == 30)
    assert (quiet.p50, quiet.p95) == next((d.p50, d.p95) for d in expected if d.day == quiet.day)


@pytest.mark.django_db
def test_stretches_follow_the_runs_through_the_day_so_a_busy_hour_weighs_its_share() -> None:
    """A day of 1,000 runs crowded into one hour that take 5 s, and 200 spread over the
    other hours that take 1 s: the busy hour holds 83% of the runs, so the day's p50 is
    5 s, as it is over every run. Stretches placed evenly in time, rather than by the
    quarters' tallies, read mostly the quiet hours and make it 1 s."""
    from schedules import run_history

    schedule = make_schedule("rush", "test.echo", every(60))
    day = date(2026, 6, 29)
    midnight = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
    rush = [midnight + timedelta(hours=9, seconds=3.6 * i) for i in range(1000)]
    calm = [midnight + timedelta(minutes=7 * i) for i in range(200) if not 8 <= i * 7 / 60 < 10.5]
    finished_runs(schedule, rush + calm, seconds=lambda at, i: 5.0 if at.hour == 9 else 1.0)
    history = run_history.run_history(schedule, days=[day], zone=UTC)
    (sampled,) = daily(history)
    (whole,) = daily(walked(every_run(schedule), [day], UTC))
    assert sampled.runs == whole.runs == 1000 + len(calm)
    assert len(history.durations[day]) <= run_history.SAMPLE_PER_DAY
    assert (sampled.p50, sampled.p95) == (whole.p50, whole.p95) == (5.0, 5.0)
    assert 1.0 in history.durations[day]  # the quiet hours are read too


@pytest.mark.django_db
def test_a_burst_queued_at_one_instant_is_read_for_its_day() -> None:
    """300 runs queued in one pass (a catch-up) and started over the next hour: the
    tallies place the stretches by start, the reads go by queue time, and a stretch
    is the runs queued last before its end, so the day still has percentiles."""
    from schedules import run_history
    from schedules.bulk import insert_rows
    from schedules.scheduler.records import new_run

    schedule = make_schedule("burst", "test.echo", every(60))
    day = date(2026, 6, 29)
    queued = datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(hours=6)
    runs = []
    for i in range(300):
        slot = queued - timedelta(minutes=300 - i)  # the missed slots, queued at once
        run = new_run(schedule, reason="scheduled", slot=slot, now=queued)
        run.status, run.started_at = "succeeded", queued + timedelta(seconds=12 * i)
        run.finished_at = run.started_at + timedelta(seconds=2)
        runs.append(run)
    insert_rows(runs)
    history = run_history.run_history(schedule, days=[day], zone=UTC)
    (sampled,) = daily(history)
    assert history.sampled and sampled.runs == 300
    # The stretches meet on the burst's last ten runs: each is read once.
    assert len(history.durations[day]) == run_history.STRETCH
    assert (sampled.p50, sampled.p95) == (2.0, 2.0)


@pytest.mark.django_db
def test_runs_on_day_boundaries_and_across_a_dst_change_count_on_their_own_day() -> None:
    """The day of a run (summed from its tallies) agrees with the operator's calendar at
    local midnight exactly, on a 23-hour day, and outside the 30 days."""
    from zoneinfo import ZoneInfo

    from schedules import run_history
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
    history = run_history.run_history(schedule, days=days, zone=zone)
    expected: dict[date, int] = {}
    for at in moments:
        day = at.astimezone(zone).date()
        if days[0] <= day <= days[-1]:
            expected[day] = expected.get(day, 0) + 1
    assert {day: count[0] for day, count in history.counts.items()} == expected
    assert expected[date(2026, 3, 29)] == 4  # its midnight, the instant before the next, 2


@pytest.mark.django_db
def test_the_strips_outcomes_are_each_schedules_last_runs_as_stored_with_aware_times() -> None:
    from schedules.selectors import STRIP_LENGTH, recent_outcomes

    owners = [make_schedule(f"strip-{i}", "test.echo", every(60)) for i in range(3)]
    for n, owner in enumerate(owners[:2]):
        finished_runs(owner, [T - timedelta(minutes=i, seconds=n) for i in range(STRIP_LENGTH + 5)])
    found = recent_outcomes([owner.pk for owner in owners])
    assert set(found) == {owners[0].pk, owners[1].pk}  # the third has no runs
    for owner in owners[:2]:
        stored = Run.objects.filter(schedule=owner).order_by("-queued_at")[:STRIP_LENGTH]
        assert [(o.pk, o.queued_at, o.started_at, o.finished_at) for o in found[owner.pk]] == [
            (r.pk, r.queued_at, r.started_at, r.finished_at) for r in reversed(stored)
        ]
        assert all(o.queued_at.utcoffset() == timedelta(0) for o in found[owner.pk])


@pytest.mark.django_db
def test_the_strip_reads_a_busy_schedules_newest_runs_in_index_order_not_all_of_them() -> None:
    """One schedule holds most of the log: its strip still reads its newest runs in
    run_history_idx's order and stops, rather than every run of it and a sort (what
    PostgreSQL planned while a plain index on the schedule existed: 72 ms at 100,000)."""
    from schedules.selectors import recent_outcomes

    busy = make_schedule("strip-busy", "test.echo", every(60))
    quiet = [make_schedule(f"strip-quiet-{i}", "test.echo", every(60)) for i in range(100)]
    finished_runs(busy, [T - timedelta(seconds=i) for i in range(3_000)])
    for owner in quiet:
        finished_runs(owner, [T])
    with CaptureQueriesContext(connection) as captured:
        recent_outcomes([busy.pk, quiet[0].pk])
    (query,) = captured.captured_queries
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE schedules_run")  # the statistics a busy log has
            cursor.execute(f"EXPLAIN {query['sql']}")
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
        plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
    assert "run_history_idx" in plan, plan
    assert "Sort" not in plan and "TEMP B-TREE" not in plan, plan
