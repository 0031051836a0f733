"""The run counters' totals: exact, a shard a writer, folded and recounted."""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from types import SimpleNamespace

import pytest
from django.db import connection, connections
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from schedules import counter_totals, counters
from schedules.counter_totals import BASE, in_steps
from schedules.models import CounterTotal, RunCounter
from tests.factories import held_elsewhere

T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
# Row locks held by another connection: PostgreSQL's (SQLite writes one at a time).
postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="about PostgreSQL's row locks"
)


def finished(code: str, duration: float, late: float) -> SimpleNamespace:
    """A run as the counters read it: what `tally` takes from a finished run."""
    started = T0 + timedelta(seconds=late)
    return SimpleNamespace(
        schedule_code=code,
        status="succeeded",
        started_at=started,
        finished_at=started + timedelta(seconds=duration),
        reason="scheduled",
        slot=T0,
    )


def as_writer(monkeypatch, shard: str) -> None:
    """Count from here as another writer would: in a shard of its own."""
    monkeypatch.setattr(counter_totals, "shard", lambda: shard)


def sums(model) -> dict[str, float]:
    return dict(model.objects.values_list("name").annotate(total=Sum("value")).order_by())


@pytest.mark.django_db
def test_the_others_sums_are_exact_and_never_fall_whatever_the_durations() -> None:
    """`_other` is the totals less the labelled counters. Were the sums of seconds
    rounded as they grow, it would wobble by a rounding error as a labelled schedule
    runs, and a fall between two scrapes is a counter reset to Prometheus."""
    rng = random.Random(18)
    labelled = {"a", "b"}
    expected = {"duration_sum": Fraction(0), "lateness_sum": Fraction(0)}
    seen = dict.fromkeys(expected, 0.0)
    for _ in range(400):
        code = rng.choice("aabbcde")
        duration = rng.choice([0.1, 1 / 3, 12345.678901, 0.005, rng.random() * 7])
        run = finished(code, duration, late=rng.choice([0.0013, 0.1, rng.random()]))
        counters.tally([run])
        if code not in labelled:
            measured = (run.finished_at - run.started_at).total_seconds()
            expected["duration_sum"] += Fraction(in_steps(measured))
            lateness = (run.started_at - run.slot).total_seconds()
            expected["lateness_sum"] += Fraction(in_steps(lateness))
        labelled_rows, others = counter_totals.read(labelled)
        assert {code for code, *_ in labelled_rows} <= labelled
        for name, exact in expected.items():
            value = others.get(name, 0.0)
            assert Fraction(value) == exact, name
            assert value >= seen[name], name
            seen[name] = value
    assert seen["duration_sum"] > 0


def test_a_sub_millisecond_run_still_adds_to_the_sums() -> None:
    assert in_steps(0.0002) > 0 and abs(in_steps(0.0002) - 0.0002) <= 0.5 / 16384
    assert in_steps(1 / 3) * 16384 == round(16384 / 3)


@pytest.mark.django_db
def test_the_totals_are_a_few_rows_a_writer_whatever_the_schedules(monkeypatch) -> None:
    for writer in ("w1", "w2"):
        as_writer(monkeypatch, writer)
        for i in range(50):
            counters.tally([finished(f"s{i}", 0.2, late=0.003)])
    assert RunCounter.objects.count() == 50 * 5
    names = set(RunCounter.objects.values_list("name", flat=True))
    assert CounterTotal.objects.count() == 2 * len(names)
    _, others = counter_totals.read(set())
    assert others["runs:succeeded"] == 100.0
    assert others["duration_sum"] == 100 * in_steps(0.2)


@pytest.mark.django_db
def test_a_fold_moves_every_shard_into_the_base_and_changes_no_figure(monkeypatch) -> None:
    for writer in ("w1", "w2", "w3"):
        as_writer(monkeypatch, writer)
        counters._add({(f"c-{writer}", "runs:succeeded"): 1.0, ("a", "runs:failed"): 2.0})
    before = counter_totals.read({"a"})
    assert set(CounterTotal.objects.values_list("shard", flat=True)) == {"w1", "w2", "w3"}
    assert counter_totals.fold() == 6
    assert set(CounterTotal.objects.values_list("shard", flat=True)) == {BASE}
    assert counter_totals.read({"a"}) == before
    counters._add({("c-w3", "runs:succeeded"): 1.0})  # w3 counts on: its row again
    assert counter_totals.read({"a"})[1] == {"runs:succeeded": 4.0}
    assert counter_totals.fold() == 1
    assert counter_totals.fold() == 0
    assert CounterTotal.objects.count() == 2  # one row a name
    assert counter_totals.read({"a"})[1] == {"runs:succeeded": 4.0}


def test_another_thread_or_a_forked_process_counts_in_a_shard_of_its_own(monkeypatch) -> None:
    """Two writers on one row would wait on each other's transactions: a scheduler's
    threads each have a connection, and a worker forked after its parent counted
    inherits the parent's thread state."""
    mine = counter_totals.shard()
    assert counter_totals.shard() == mine
    theirs: list[str] = []
    thread = threading.Thread(target=lambda: theirs.append(counter_totals.shard()))
    thread.start()
    thread.join()
    assert theirs[0] != mine
    child_pid = os.getpid() + 1  # as a forked child sees it
    monkeypatch.setattr(counter_totals.os, "getpid", lambda: child_pid)
    child = counter_totals.shard()
    assert child not in (mine, theirs[0]) and counter_totals.shard() == child


@pytest.mark.django_db(transaction=True)
def test_the_counters_and_the_totals_are_written_together_or_not_at_all(monkeypatch) -> None:
    """A scrape between the two writes would see `_other` fall (the counters grown,
    the totals not yet)."""
    add = counter_totals.add

    def failing(added) -> None:
        add(added)
        raise RuntimeError("the database went away")

    monkeypatch.setattr(counter_totals, "add", failing)
    with pytest.raises(RuntimeError):
        counters._add({("a", "runs:succeeded"): 1.0})  # outside any transaction
    assert not RunCounter.objects.exists() and not CounterTotal.objects.exists()


def counted_without_totals(code: str, name: str, value: float) -> None:
    """What a process still running the code before the totals (migration 0028) does."""
    counter_totals.upsert(RunCounter, "schedule_code", {(code, name): value})


@pytest.mark.django_db
def test_a_recount_repairs_what_a_writer_that_skipped_the_totals_left(caplog) -> None:
    counters.tally([finished("a", 0.25, late=0.01), finished("b", 0.5, late=0.02)])
    counted_without_totals("b", "runs:succeeded", 1.0)
    counted_without_totals("b", "duration_sum", 0.1)  # unrounded: off the steps
    assert counter_totals.read({"a"})[1]["runs:succeeded"] == 1.0  # b's second run missing
    with caplog.at_level(logging.WARNING, logger="schedules.counter_totals"):
        corrections = counter_totals.recount()
    assert corrections == {"runs:succeeded": 1.0, "duration_sum": in_steps(0.1)}
    assert "recounted" in caplog.text
    b_sum = RunCounter.objects.get(schedule_code="b", name="duration_sum").value
    assert b_sum == in_steps(0.5) + in_steps(0.1)  # rounded to the steps
    assert sums(CounterTotal) == sums(RunCounter)
    others = counter_totals.read({"a"})[1]
    assert others["runs:succeeded"] == 2.0 and others["duration_sum"] == b_sum


@pytest.mark.django_db
def test_a_recount_of_consistent_totals_reads_and_writes_nothing() -> None:
    counters.tally([finished("a", 0.25, late=0.01), finished("b", 0.5, late=0.02)])
    counter_totals.fold()
    before = list(CounterTotal.objects.order_by("pk").values_list("pk", "shard", "name", "value"))
    with CaptureQueriesContext(connection) as captured:
        assert counter_totals.recount() == {}
    writes = [q["sql"] for q in captured.captured_queries if not q["sql"].startswith("SELECT")]
    assert not writes, writes  # SQLite's write lock is the whole database's
    after = list(CounterTotal.objects.order_by("pk").values_list("pk", "shard", "name", "value"))
    assert after == before


@pytest.mark.django_db
def test_totals_behind_the_counters_are_said_and_never_exported_below_zero(caplog) -> None:
    counters._add({("a", "runs:failed"): 3.0, ("b", "runs:failed"): 1.0})
    CounterTotal.objects.all().delete()  # as a hand edit would
    counter_totals._negative_logged.clear()
    with caplog.at_level(logging.WARNING, logger="schedules.counter_totals"):
        assert counter_totals.read({"a"})[1] == {}
    assert "runs:failed are behind the counters" in caplog.text
    counter_totals.recount()
    assert counter_totals.read({"a"})[1] == {"runs:failed": 1.0}


@pytest.mark.production
@postgresql_only
def test_a_fold_leaves_a_shard_another_writer_holds_and_does_not_wait(transactional_db) -> None:
    counters._add({("a", "runs:succeeded"): 1.0})  # this writer's shard, committed
    with held_elsewhere(  # another writer counting, its transaction open
        lambda: counter_totals.upsert(CounterTotal, "shard", {("other", "runs:succeeded"): 5.0})
    ):
        assert counter_totals.fold() == 1  # had it waited, it would fold both rows
    shards = dict(CounterTotal.objects.values_list("shard", "value"))
    assert shards == {BASE: 1.0, "other": 5.0}
    assert counter_totals.fold() == 1
    assert dict(CounterTotal.objects.values_list("shard", "value")) == {BASE: 6.0}


@pytest.mark.production
@postgresql_only
def test_a_write_to_a_row_a_fold_took_waits_for_it_then_counts_again(
    transactional_db, monkeypatch
) -> None:
    """The fold deleted the writer's row; once it commits, the writer's upsert inserts
    the row again (PostgreSQL retries it) and nothing is lost or counted twice."""
    counters._add({("a", "runs:succeeded"): 1.0})
    upsert, holding, release = counter_totals.upsert, threading.Event(), threading.Event()

    def held_open(model, key, added) -> None:
        upsert(model, key, added)
        if threading.current_thread().name == "folding":
            holding.set()
            release.wait(10)

    monkeypatch.setattr(counter_totals, "upsert", held_open)

    def run(target) -> None:
        try:
            target()
        finally:
            connections.close_all()

    folder = threading.Thread(target=run, args=(counter_totals.fold,), name="folding")
    folder.start()
    assert holding.wait(10)
    shard = counter_totals.shard()  # the writer thread counts as this one does
    monkeypatch.setattr(counter_totals, "shard", lambda: shard)
    add = lambda: counters._add({("a", "runs:succeeded"): 2.0})  # noqa: E731
    writer = threading.Thread(target=run, args=(add,))
    writer.start()
    try:
        assert waiting_on_a_lock(within=10)
    finally:
        release.set()
        folder.join()
        writer.join()
    assert sums(CounterTotal) == sums(RunCounter) == {"runs:succeeded": 3.0}
    assert dict(CounterTotal.objects.values_list("shard", "value")) == {BASE: 1.0, shard: 2.0}


def waiting_on_a_lock(within: float) -> bool:
    """Whether another connection waits on a row lock, polled (PostgreSQL)."""
    deadline = time.monotonic() + within
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            )
            if cursor.fetchone()[0]:
                return True
            time.sleep(0.01)
    return False
