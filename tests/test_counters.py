"""The run counters' totals: exact, one shard a process, folded without waiting."""

from __future__ import annotations

import os
import random
import threading
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from types import SimpleNamespace

import pytest
from django.db import connections, transaction

from schedules import counters
from schedules.models import CounterTotal, RunCounter

T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


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


def as_process(monkeypatch, shard: str) -> None:
    """Count from here as another process would: in a shard of its own."""
    monkeypatch.setattr(counters, "_shard", (os.getpid(), shard))


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
            expected["duration_sum"] += Fraction(counters.in_steps(measured))
            lateness = (run.started_at - run.slot).total_seconds()
            expected["lateness_sum"] += Fraction(counters.in_steps(lateness))
        labelled_rows, others = counters.read(labelled)
        assert {code for code, *_ in labelled_rows} <= labelled
        for name, exact in expected.items():
            value = others.get(name, 0.0)
            assert Fraction(value) == exact, name
            assert value >= seen[name], name
            seen[name] = value
    assert seen["duration_sum"] > 0


@pytest.mark.django_db
def test_the_totals_are_a_few_rows_a_process_whatever_the_schedules(monkeypatch) -> None:
    for process in ("p1", "p2"):
        as_process(monkeypatch, process)
        for i in range(50):
            counters.tally([finished(f"s{i}", 0.2, late=0.003)])
    assert RunCounter.objects.count() == 50 * 5
    names = set(RunCounter.objects.values_list("name", flat=True))
    assert CounterTotal.objects.count() == 2 * len(names)
    _, others = counters.read(set())
    assert others["runs:succeeded"] == 100.0
    assert others["duration_sum"] == 100 * counters.in_steps(0.2)


@pytest.mark.django_db
def test_a_fold_moves_every_shard_into_the_base_and_changes_no_figure(monkeypatch) -> None:
    for process in ("p1", "p2", "p3"):
        as_process(monkeypatch, process)
        counters._add({(f"c-{process}", "runs:succeeded"): 1.0, ("a", "runs:failed"): 2.0})
    before = counters.read({"a"})
    assert set(CounterTotal.objects.values_list("shard", flat=True)) == {"p1", "p2", "p3"}
    assert counters.fold_totals() == 6
    assert set(CounterTotal.objects.values_list("shard", flat=True)) == {counters.BASE}
    assert counters.read({"a"}) == before
    counters._add({("c-p3", "runs:succeeded"): 1.0})  # p3 counts on: its row again
    assert counters.read({"a"})[1] == {"runs:succeeded": 4.0}
    assert counters.fold_totals() == 1
    assert counters.fold_totals() == 0
    assert CounterTotal.objects.count() == 2  # one row a name
    assert counters.read({"a"})[1] == {"runs:succeeded": 4.0}


@pytest.mark.django_db
def test_a_forked_process_counts_in_a_shard_of_its_own(monkeypatch) -> None:
    """A worker forked after its parent counted must not add to the parent's rows: the
    two would wait on each other's transactions."""
    parent = counters.shard()
    assert counters.shard() == parent
    child_pid = os.getpid() + 1
    monkeypatch.setattr(counters.os, "getpid", lambda: child_pid)
    child = counters.shard()
    assert child != parent and counters.shard() == child


@pytest.mark.django_db(transaction=True)
def test_the_counters_and_the_totals_are_written_together_or_not_at_all(monkeypatch) -> None:
    """A scrape between the two upserts would see `_other` fall (the counters grown,
    the totals not yet)."""
    upsert = counters._upsert

    def failing(model, key, added) -> None:
        upsert(model, key, added)
        if model is CounterTotal:
            raise RuntimeError("the database went away")

    monkeypatch.setattr(counters, "_upsert", failing)
    with pytest.raises(RuntimeError):
        counters._add({("a", "runs:succeeded"): 1.0})  # outside any transaction
    assert not RunCounter.objects.exists() and not CounterTotal.objects.exists()


@pytest.mark.production
def test_a_fold_leaves_a_shard_another_process_is_writing_and_does_not_wait(
    transactional_db, monkeypatch
) -> None:
    counters._add({("a", "runs:succeeded"): 1.0})  # this process's shard, committed
    written, release = threading.Event(), threading.Event()

    def counting_in_an_open_transaction() -> None:
        try:
            with transaction.atomic():
                counters._upsert(CounterTotal, "shard", {("other", "runs:succeeded"): 5.0})
                written.set()
                release.wait(10)  # (a fold that waited would fold both rows: the test fails)
        finally:
            connections.close_all()

    writer = threading.Thread(target=counting_in_an_open_transaction)
    writer.start()
    try:
        assert written.wait(10)
        assert counters.fold_totals() == 1
    finally:
        release.set()
        writer.join()
    shards = dict(CounterTotal.objects.values_list("shard", "value"))
    assert shards == {counters.BASE: 1.0, "other": 5.0}
    assert counters.fold_totals() == 1
    assert dict(CounterTotal.objects.values_list("shard", "value")) == {counters.BASE: 6.0}
