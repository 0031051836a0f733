"""A run whose output, error or result holds what no database stores (a NUL, a lone
surrogate), or whose exception cannot even be printed, is recorded (cleaned, or
described as far as it can be) and never holds back the outcomes of the runs after it."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from schedules.models import Run, RunOutput, RunStatus
from schedules.storable import REPLACEMENT, storable_json, storable_text
from tests.factories import create, every, runs_of

STORED = f"a{REPLACEMENT}b {REPLACEMENT} c"


def test_storable_text_and_json_replace_only_what_no_database_stores() -> None:
    assert storable_text("a\x00b \udcff c") == STORED
    fine = "plain, accents é, and an emoji 😀"
    assert storable_text(fine) is fine
    assert storable_json({"k\x00": ["\udcff", 1, None, {"x": "😀"}]}) == {
        f"k{REPLACEMENT}": [REPLACEMENT, 1, None, {"x": "😀"}]
    }


async def outcome(code: str) -> tuple[Run, RunOutput | None]:
    (run,) = await runs_of(code)
    output = await sync_to_async(RunOutput.objects.filter(run=run).first)()
    return run, output


async def fire(scheduler, clock) -> None:
    """The slot falls due: one pass, and its runs to their recorded end (bounded: a
    refused outcome used to be retried for ever)."""
    clock.advance(60)
    await scheduler.run_pass()
    async with asyncio.timeout(30):
        await scheduler.wait_idle()


async def run_both(scheduler, clock, task: str, where: str) -> None:
    await create("poison", task, every(60), kwargs={"where": where})
    await create("after", "test.echo", every(60))
    await fire(scheduler, clock)


async def stored_cleaned(scheduler, clock, task: str, where: str) -> None:
    await run_both(scheduler, clock, task, where)

    run, output = await outcome("poison")
    if where == "output":
        assert run.status == RunStatus.SUCCEEDED
        assert STORED in output.text
    elif where == "error":
        assert run.status == RunStatus.FAILED
        assert run.error == f"ValueError: {STORED}"
        assert STORED in run.traceback
    else:
        assert run.status == RunStatus.SUCCEEDED
        assert run.result == {"text": STORED, STORED: [STORED]}
    (after,) = await runs_of("after")
    assert after.status == RunStatus.SUCCEEDED


@pytest.mark.parametrize("where", ["output", "error", "result"])
async def test_an_unstorable_outcome_in_a_worker_is_stored_cleaned_and_holds_back_nothing(
    pooled, clock, where
) -> None:
    await stored_cleaned(pooled, clock, "test.unstorable", where)


@pytest.mark.parametrize("where", ["output", "error", "result"])
async def test_an_unstorable_outcome_inline_is_stored_cleaned_and_holds_back_nothing(
    scheduler, clock, where
) -> None:
    await stored_cleaned(scheduler, clock, "test.unstorable_inline", where)


@pytest.mark.parametrize(
    ("refused", "status", "error"),
    [
        # What it carried is refused: written without it, its status kept.
        ("result", "succeeded", "its result and output could not be stored ({})"),
        # Refused whatever it carries: a failure of its own, so it does not stay running.
        ("outcome", "failed", "its outcome could not be stored ({})"),
    ],
)
async def test_an_outcome_the_database_refuses_anyway_costs_only_its_own_run(
    scheduler, clock, monkeypatch, refused, status, error
) -> None:
    """Whatever a future refusal is, only its own run pays: the others are written."""
    from schedules.scheduler import outcomes

    plain = outcomes.finish_runs
    refusal = "ValueError: a value the database refuses"

    def refusing(*, items, now):
        for run, outcome in items:
            carries = outcome["result"] is not None or refused == "outcome"
            if run.schedule_code == "poison" and carries and outcome["status"] != "failed":
                raise ValueError("a value the database refuses")
        return plain(items=items, now=now)

    monkeypatch.setattr(outcomes, "finish_runs", refusing)
    await create("poison", "test.echo", every(60), kwargs={"refuse": "me"})
    await create("after", "test.echo", every(60))
    await fire(scheduler, clock)

    (run,) = await runs_of("poison")
    assert (run.status, run.error, run.result) == (status, error.format(refusal), None)
    (after,) = await runs_of("after")
    assert (after.status, after.result) == (RunStatus.SUCCEEDED, {})


@override_settings(SILLO_RESULT_MAX_CHARS=100)
async def test_a_result_too_long_is_cut_once_not_again_in_the_scheduler(pooled, clock) -> None:
    """The worker caps a result and the scheduler checks it again (middleware may have
    changed it): the worker's cut came back wrapped a second time."""
    await create("big", "test.echo", every(60), kwargs={"data": "y" * 1_000})
    await fire(pooled, clock)

    (run,) = await runs_of("big")
    assert run.result == {"truncated": True, "preview": '{"data": "' + "y" * 90}


def test_a_result_shaped_like_a_cut_is_capped_and_cleaned_like_any_other() -> None:
    from schedules.scheduler.child import jsonable

    ours = jsonable({"data": "y" * 1_000}, 100)
    assert jsonable(ours, 100) is ours  # a cut is not cut again
    forged = {"truncated": True, "preview": "\x00" * 1_000}
    capped = jsonable(forged, 100)
    assert capped["truncated"] is True and len(capped["preview"]) == 100
    assert "\\u0000" not in capped["preview"]


async def fails_unprintable(scheduler, clock) -> Run:
    await create("unprintable", "test.unprintable", every(60))
    await fire(scheduler, clock)
    (run,) = await runs_of("unprintable")
    assert (run.status, run.error) == ("failed", "Unprintable (its message could not be printed)")
    return run


async def test_an_exception_that_cannot_be_printed_fails_its_run_in_a_worker(pooled, clock) -> None:
    """Its __str__ raised in the worker, which died: "exited with code 1 (os._exit?)"."""
    run = await fails_unprintable(pooled, clock)
    assert "Unprintable" in run.traceback


async def test_an_exception_that_cannot_be_printed_fails_its_run_inline(scheduler, clock) -> None:
    await fails_unprintable(scheduler, clock)
