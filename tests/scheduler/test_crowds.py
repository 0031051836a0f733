"""A crowd of slots due at one instant is claimed early enough to start at it (lead.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from schedules.models import RunStatus
from schedules.scheduler import claims
from schedules.scheduler.lead import FIRST_GUESS, LONGEST, MEASURED_FROM, ROOM, WEIGHT, ClaimCost
from tests.factories import T0, create, every, runs_of
from tests.scheduler.test_firing import noting_starts

SLOT = T0 + timedelta(seconds=300)


def cost(per_slot: float) -> ClaimCost:
    measured = ClaimCost()
    measured.per_slot = per_slot
    return measured


def test_a_lone_slot_or_a_steady_load_is_no_crowd() -> None:
    lead = timedelta(seconds=0.05)
    assert cost(0.0002).crowd([SLOT], lead) is None
    steady = [SLOT + timedelta(milliseconds=10 * i) for i in range(300)]  # 100 runs a second
    assert cost(0.0002).crowd(steady, lead) is None


def test_a_crowd_is_claimed_from_its_claims_time_before_its_instant() -> None:
    crowd = cost(0.0002).crowd([SLOT] * 1000, timedelta(seconds=0.05))
    assert crowd is not None
    assert crowd.until == SLOT
    assert (SLOT - crowd.start).total_seconds() == pytest.approx(ROOM * 1000 * 0.0002)


def test_the_slots_just_before_a_crowd_are_claimed_with_it() -> None:
    """Those due while its claims are under way (oldest first) are claimed with it;
    those earlier, each in its own pass."""
    before = [SLOT - timedelta(milliseconds=10 * i) for i in range(50, 0, -1)]
    crowd = cost(0.0002).crowd([*before, *[SLOT] * 1000], timedelta(seconds=0.05))
    assert crowd.until == SLOT
    # The crowd's claims take 0.3 s. The 25 slots due in the 0.25 s before that lead
    # are claimed with it (each 0.3 ms more); from the 26th on, a slot's own pass (its
    # usual lead before it) comes before the crowd's claims begin.
    each = ROOM * 0.0002
    assert (SLOT - crowd.start).total_seconds() == pytest.approx(1000 * each + 25 * each)


def test_of_two_crowds_apart_the_first_is_claimed_first() -> None:
    later = SLOT + timedelta(seconds=0.5)
    crowd = cost(0.0002).crowd([*[SLOT] * 500, *[later] * 1000], timedelta(seconds=0.05))
    assert crowd.until == SLOT
    assert (SLOT - crowd.start).total_seconds() == pytest.approx(500 * ROOM * 0.0002)


def test_a_crowd_is_claimed_at_most_longest_ahead() -> None:
    crowd = cost(0.0002).crowd([SLOT] * 20_000, timedelta(seconds=0.05))
    assert crowd.start == SLOT - timedelta(seconds=LONGEST)


def test_without_a_claim_lead_nothing_is_claimed_ahead_crowd_or_not() -> None:
    assert cost(0.0002).crowd([SLOT] * 1000, timedelta(0)) is None


def test_the_cost_per_slot_follows_the_passes_that_claimed_enough_to_measure_it() -> None:
    measured = ClaimCost()
    measured.noted(0.5, MEASURED_FROM - 1)  # mostly the transaction: not a cost per slot
    assert measured.per_slot == FIRST_GUESS
    measured.noted(0.5, 500)
    assert measured.per_slot == pytest.approx(FIRST_GUESS + WEIGHT * (0.001 - FIRST_GUESS))
    # It looks no further than the slots that would make the longest lead.
    assert cost(0.0002).within() == int(LONGEST / (ROOM * 0.0002)) + 1


async def test_a_crowd_due_at_one_instant_is_claimed_before_it_and_starts_at_it(
    scheduler, clock, settings, monkeypatch
) -> None:
    settings.SILLO_CLAIM_AHEAD = 0.05
    for i in range(30):
        await create(f"crowd{i}", "test.echo", every(300))
    scheduler.claim_cost.per_slot = 0.01  # 30 slots: 0.45 s of claims, with room
    claimed_at = spy_claims(monkeypatch, clock)
    starts = noting_starts(scheduler, clock)
    clock.advance(299)
    # The loop wakes when the crowd's claims must begin, not SILLO_CLAIM_AHEAD before it.
    assert await scheduler.run_pass() == pytest.approx(1 - ROOM * 30 * 0.01)
    clock.advance(1 - ROOM * 30 * 0.01)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert claimed_at == [(SLOT - timedelta(seconds=ROOM * 30 * 0.01), 30)]
    assert starts == [SLOT] * 30  # each body began at its instant
    assert {(run.status, run.started_at) for run in await all_runs()} == {
        (RunStatus.SUCCEEDED, SLOT)
    }


def spy_claims(monkeypatch, clock) -> list:
    """(the scheduler's time, slots claimed) of each claim pass that claimed any."""
    claimed_at = []
    claim_due = claims.claim_due

    def noting(**kwargs):
        runs, replaced = claim_due(**kwargs)
        if runs:
            claimed_at.append((clock.now(), len(runs)))
        return runs, replaced

    monkeypatch.setattr(claims, "claim_due", noting)
    return claimed_at


async def all_runs():
    return [run for i in range(30) for run in await runs_of(f"crowd{i}")]


async def test_without_a_claim_lead_a_crowd_is_claimed_at_its_instant(
    scheduler, clock, settings
) -> None:
    settings.SILLO_CLAIM_AHEAD = 0
    for i in range(30):
        await create(f"crowd{i}", "test.echo", every(300))
    scheduler.claim_cost.per_slot = 0.01
    clock.advance(299.5)
    assert await scheduler.run_pass() == pytest.approx(0.5)
    assert await all_runs() == []


async def test_a_steady_load_reads_the_slots_due_soon_at_most_every_look_interval(
    scheduler, clock, settings, monkeypatch
) -> None:
    """Under a steady load passes come back to back: each would otherwise read a
    second of slots to find no crowd."""
    settings.SILLO_CLAIM_AHEAD = 0.05
    for i in range(20):
        schedule = await create(f"steady{i}", "test.echo", every(300))
        await move_slot(schedule, SLOT + timedelta(milliseconds=60 * i))
    looks = []
    slots_due = claims.slots_due

    def counted(**kwargs):
        looks.append(clock.now())
        return slots_due(**kwargs)

    monkeypatch.setattr(claims, "slots_due", counted)
    clock.advance(299.9)
    passes = 0
    while clock.now() < SLOT + timedelta(seconds=1.0):  # before the last slot's claim
        delay = await scheduler.run_pass()
        await scheduler.wait_idle()
        clock.advance(max(delay, 0.01))
        passes += 1
    assert len(await all_steady()) >= 16  # a pass for each slot
    assert passes >= 16
    assert 1 <= len(looks) <= 5  # 1.1 s of passes: a look at most every 0.25 s
    assert all(b - a >= timedelta(seconds=0.25) for a, b in zip(looks, looks[1:], strict=False))


async def all_steady():
    return [run for i in range(20) for run in await runs_of(f"steady{i}")]


async def move_slot(schedule, slot) -> None:
    from asgiref.sync import sync_to_async

    from schedules.models import Schedule

    await sync_to_async(Schedule.objects.filter(pk=schedule.pk).update)(next_run_at=slot)
