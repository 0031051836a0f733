"""Chains end to end: two real schedulers on one database, one killed mid-chain.

On SQLite here, and on PostgreSQL in the production pass (`site` picks the
server from DATABASE_URL). Every final outcome must have exactly its
follow-ups: a success one `then` run, a failure (an interrupted run of the
killed scheduler included) one `catch` run; nothing lost, nothing doubled.
"""

from __future__ import annotations

import signal
import time

import pytest

from .conftest import rarely

pytestmark = pytest.mark.slow

STEP = {"seconds": 0.4}


RUNNING_ON = (
    "SELECT r.id FROM schedules_run r JOIN schedules_schedulerinstance i ON r.scheduler = i.id "
    "WHERE r.status = 'running' AND i.pid = ?"
)


def kill_mid_run(site, victim):
    """SIGKILL the victim with a run of its own still running; returns the one killed so.

    A run seen running may have its outcome written before the signal lands (the
    lag of a loaded machine): then another victim is started and killed, so that
    the test always has an interrupted run to check.
    """
    for _ in range(3):
        site.wait_for(RUNNING_ON, victim.pid)
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        if site.query(RUNNING_ON, victim.pid):  # dead: nothing it owns changes any more
            return victim
        victim = site.start()
    raise AssertionError(f"no kill landed while a run was running\n{site.logs()}")


def test_a_chain_of_three_survives_a_killed_scheduler_each_follow_up_once(site) -> None:
    never = rarely()
    wide = {"max_instances": 100, "kwargs": STEP}
    site.schedules([
        ("rescue", "test.echo", never, {"max_instances": 100}),
        ("step3", "test.sleep", never, {**wide, "catch": ["rescue"]}),
        ("step2", "test.sleep", never, {**wide, "then": ["step3"], "catch": ["rescue"]}),
        ("step1", "test.sleep", {"kind": "interval", "every": 1},
         {**wide, "then": ["step2"], "catch": ["rescue"]}),
    ])  # fmt: skip
    # The victim starts alone, so chains are in flight on it whichever scheduler wins
    # the race for each slot: the race is as old as the test, but a busy scheduler no
    # longer reads its runs in flight before each claim, and two equally fast ones
    # may leave one with none (seen once under a loaded machine).
    victim = site.start()
    site.wait_for(
        "SELECT 1 FROM schedules_run WHERE schedule_code = 'step3' AND status = 'succeeded'",
        timeout=60,
    )
    survivor = site.start()
    site.wait_for("SELECT 1 FROM schedules_schedulerinstance WHERE pid = ?", survivor.pid)
    # Kill it while its chains are in flight (and the survivor's, if it won any slot).
    victim = kill_mid_run(site, victim)
    time.sleep(6)  # chains go on on the survivor; the victim's heartbeat goes stale (3 s)
    site.manage("schedules", "cancel", "step1")  # stops firing, drops its queued runs
    site.wait_for(
        "SELECT 1 WHERE NOT EXISTS "
        "(SELECT 1 FROM schedules_run WHERE status IN ('queued', 'running'))",
        timeout=60,
    )
    assert site.stop(survivor) == 0

    finals = site.query(
        "SELECT id, schedule_code, status FROM schedules_run "
        "WHERE schedule_code IN ('step1', 'step2', 'step3')"
    )
    children: dict[int, list[str]] = {}
    for parent, code in site.query(
        "SELECT parent_id, schedule_code FROM schedules_run WHERE reason = 'chained'"
    ):
        children.setdefault(parent, []).append(code)
    wanted_then = {"step1": ["step2"], "step2": ["step3"], "step3": None}
    for run_id, code, status in finals:
        if status == "succeeded":
            assert children.get(run_id) == wanted_then[code], (run_id, code, status)
        elif status in ("failed", "timed_out", "interrupted"):
            assert children.get(run_id) == ["rescue"], (run_id, code, status)
        else:
            assert run_id not in children, (run_id, code, status)
    # Not one follow-up without its parent, none doubled, each ran (or ended) once.
    assert site.query(
        "SELECT count(*) FROM schedules_run WHERE reason = 'chained' AND parent_id IS NULL"
    ) == [(0,)]
    doubled = site.query(
        "SELECT parent_id, schedule_code, count(*) FROM schedules_run WHERE reason = 'chained' "
        "GROUP BY parent_id, schedule_code HAVING count(*) > 1"
    )
    assert doubled == []
    # The kill interrupted a run, whose catch ran; whole chains of three completed.
    interrupted = site.query(
        "SELECT id FROM schedules_run WHERE status = 'interrupted' AND scheduler IN "
        "(SELECT id FROM schedules_schedulerinstance WHERE pid = ?)",
        victim.pid,
    )
    assert interrupted, site.logs()
    assert all(children.get(run_id) == ["rescue"] for (run_id,) in interrupted if run_id in
               {r for r, c, _ in finals})  # fmt: skip
    complete = site.query(
        "SELECT count(*) FROM schedules_run r3 "
        "JOIN schedules_run r2 ON r3.parent_id = r2.id "
        "JOIN schedules_run r1 ON r2.parent_id = r1.id "
        "WHERE r3.schedule_code = 'step3' AND r3.status = 'succeeded' "
        "AND r2.schedule_code = 'step2' AND r1.schedule_code = 'step1'"
    )
    assert complete[0][0] >= 3
    # Both schedulers ran links of the chains (which one claims a follow-up is a race:
    # usually the one that recorded its parent, woken at once).
    ran_on = site.query(
        "SELECT count(DISTINCT scheduler) FROM schedules_run "
        "WHERE schedule_code IN ('step1', 'step2', 'step3', 'rescue')"
    )
    assert ran_on[0][0] >= 2, "chains ran on both schedulers"
