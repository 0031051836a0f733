"""A corrupt stored record, written straight into the database, stops nothing else."""

from __future__ import annotations

import logging
import os
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import DataError, connection, transaction
from django.test import Client

from schedules.models import Run, RunStatus, Schedule
from tests.factories import T0, create, every, make_schedule, reload, runs_of

from .conftest import login_as

# Each is what a bad migration or a manual edit could leave in the trigger or kwargs column
# (text that is not JSON at all, or NaN, both databases refuse: JSON_VALID, jsonb).
CORRUPT = {
    "unicode-digit": ("trigger", '{"kind": "cron", "expression": "0 \\u00b2 * * *", "tz": "UTC"}'),
    "huge-int": ("trigger", '{"kind": "interval", "every": ' + "9" * 5000 + "}"),
    "not-an-object": ("trigger", '["cron", "* * * * *"]'),
    "string": ("trigger", '"0 9 * * *"'),
    "bad-zone": ("trigger", '{"kind": "cron", "expression": "* * * * *", "tz": "Europe"}'),
    "far-date": ("trigger", '{"kind": "date", "at": "0001-01-01T00:00:00+05:00"}'),
    "deep": ("trigger", "[" * 990 + "]" * 990),
    "surrogate-kwargs": ("kwargs", '{"x": "\\ud800"}'),
    "huge-kwargs": ("kwargs", '{"x": ' + "7" * 5000 + "}"),
    "list-kwargs": ("kwargs", "[1, 2, 3]"),
}


def corrupt(schedule: Schedule, column: str, raw: str) -> None:
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE schedules_schedule SET {quote(column)} = %s WHERE id = %s",
                       [raw, schedule.pk])  # fmt: skip


ON_POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
# PostgreSQL's jsonb cannot hold a lone surrogate at all (its own test below says so).
CASES = sorted(case for case in CORRUPT if not (ON_POSTGRES and case == "surrogate-kwargs"))


@pytest.mark.skipif(not ON_POSTGRES, reason="about PostgreSQL's jsonb")
@pytest.mark.production
def test_postgresql_cannot_store_a_lone_surrogate_so_no_record_holds_one(db) -> None:
    schedule = make_schedule("holder", "test.echo", every(60))
    with pytest.raises(DataError), transaction.atomic():
        corrupt(schedule, "kwargs", CORRUPT["surrogate-kwargs"][1])


@pytest.mark.parametrize("case", CASES)
async def test_a_corrupt_record_is_parked_and_the_others_keep_firing_on_time(
    scheduler, clock, case, caplog
) -> None:
    column, raw = CORRUPT[case]
    good = await create("good", "test.echo", every(60))
    bad = await create("bad", "test.echo", every(30))
    await sync_to_async(corrupt)(bad, column, raw)

    caplog.set_level(logging.ERROR, logger="schedules.scheduler.claims")
    for minute in range(1, 4):
        clock.advance(60)
        await scheduler.run_pass()
        await scheduler.wait_idle()
        runs = await runs_of("good")
        # On time: one run per slot, each claimed at its own slot.
        assert [r.slot for r in runs] == [T0 + timedelta(seconds=60 * m) for m in
                                          range(1, minute + 1)]  # fmt: skip
        assert all(r.status == RunStatus.SUCCEEDED for r in runs)

    parked = await reload(bad)
    assert parked.next_run_at is None
    assert parked.invalid_reason
    assert await runs_of("bad") == []
    # Logged once, not on every pass.
    assert len([r for r in caplog.records if "parked as invalid" in r.getMessage()]) == 1
    assert (await reload(good)).next_run_at == T0 + timedelta(seconds=240)

    def pages() -> None:
        client = login_as(Client(), "viewer")
        listing = client.get("/")
        assert listing.status_code == 200
        assert "INVALID" in listing.content.decode()
        assert client.get("/?flag=invalid").status_code == 200
        assert "bad" in client.get("/?flag=invalid").content.decode()
        assert client.get(f"/schedules/{bad.pk}/").status_code == 200
        assert client.get("/live/").status_code == 200

    await sync_to_async(pages)()


async def test_a_parked_schedule_fires_again_once_fixed_and_saved(scheduler, clock) -> None:
    from schedules import services

    bad = await create("bad", "test.echo", every(60))
    await sync_to_async(corrupt)(bad, "trigger", '{"kind": "cron", "expression": "0 ² * * *"}')
    clock.advance(60)
    await scheduler.run_pass()
    parked = await reload(bad)
    assert parked.invalid_reason and parked.next_run_at is None

    await sync_to_async(services.schedule_update)(
        schedule=parked, trigger=every(60), now=clock.now()
    )
    fixed = await reload(bad)
    assert fixed.invalid_reason == "" and fixed.next_run_at == T0 + timedelta(seconds=120)
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert [r.status for r in await runs_of("bad")] == [RunStatus.SUCCEEDED]


async def test_kwargs_that_no_longer_fit_fail_once_at_claim_without_retries(
    scheduler, clock
) -> None:
    unfit = await create("unfit", "test.fail", every(60), max_attempts=3)
    await sync_to_async(Schedule.objects.filter(pk=unfit.pk).update)(kwargs={"old_name": 1})
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    clock.advance(30)
    await scheduler.run_pass()  # a retry would be due by now
    await scheduler.wait_idle()
    runs = await runs_of("unfit")
    assert [(r.status, r.attempt) for r in runs] == [(RunStatus.FAILED, 1)]
    assert "old_name" in runs[0].error and "signature changed" in runs[0].error
    schedule = await reload(unfit)
    assert schedule.last_outcome == RunStatus.FAILED and schedule.error_count == 1
    assert schedule.next_run_at == T0 + timedelta(seconds=120)  # its slots go on


async def test_a_queued_manual_run_whose_kwargs_do_not_fit_fails_at_claim(scheduler, clock) -> None:
    from schedules import services

    unfit = await create("unfit", "test.fail", every(3600), max_attempts=3)
    await sync_to_async(Schedule.objects.filter(pk=unfit.pk).update)(kwargs={"old_name": 1})
    run = await sync_to_async(services.schedule_run_now)(schedule=await reload(unfit))
    await sync_to_async(Run.objects.filter(pk=run.pk).update)(not_before=clock.now())
    await scheduler.run_pass()
    await scheduler.wait_idle()
    runs = await runs_of("unfit")
    assert [(r.status, r.reason) for r in runs] == [(RunStatus.FAILED, "manual")]


async def test_a_manual_run_of_a_schedule_with_a_corrupt_trigger_is_recorded(
    scheduler, clock
) -> None:
    from schedules import services

    odd = await create("odd", "test.echo", every(3600))
    await sync_to_async(corrupt)(odd, "trigger", '["not", "a", "spec"]')
    run = await sync_to_async(services.schedule_run_now)(schedule=await reload(odd))
    await sync_to_async(Run.objects.filter(pk=run.pk).update)(not_before=clock.now())
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert [r.status for r in await runs_of("odd")] == [RunStatus.SUCCEEDED]
    assert (await reload(odd)).last_outcome == RunStatus.SUCCEEDED


def test_reads_share_one_decoder_which_still_reads_whatever_a_record_holds() -> None:
    """Django's JSONField builds a decoder for every value it reads; this one is built
    once, and a decoder given options is its own (the shared one keeps its rules)."""
    import json
    from decimal import Decimal

    from schedules.validation import HugeInt, StoredJSONDecoder

    assert StoredJSONDecoder() is StoredJSONDecoder()
    huge = json.loads('{"n": ' + "9" * 5000 + "}", cls=StoredJSONDecoder)["n"]
    assert isinstance(huge, HugeInt) and huge == "9" * 5000
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        json.loads("[" * 100_000 + "]" * 100_000, cls=StoredJSONDecoder)
    exact = StoredJSONDecoder(parse_float=Decimal)
    assert exact is not StoredJSONDecoder() and exact.decode("[1.5]") == [Decimal("1.5")]
    assert StoredJSONDecoder().decode("[1.5, 7]") == [1.5, 7]
