"""The incident state machine, transition by transition, on the fake clock's times."""

from __future__ import annotations

import pytest

from schedules.alerts import machine as m
from schedules.alerts.schema import InvalidRules, clean_rules
from tests.factories import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def fail(state, rules, clock, run_id=1, *, final=True, status="failed", probe=False):
    return m.after_outcome(
        state, rules, status=status, final=final, run_id=run_id, now=clock.now(), probe=probe
    )


def kinds(actions, cls):
    return [(a.kind, a.event, a.notify) for a in actions if isinstance(a, cls)]


def test_a_final_failure_opens_failing_once_and_notifies_failed(clock) -> None:
    state, actions = fail(m.State(), m.Rules(), clock)
    assert kinds(actions, m.Open) == [("failing", "failed", True)]
    assert state.consecutive_failures == 1
    clock.advance(60)
    state, actions = fail(state, m.Rules(), clock, run_id=2)
    assert kinds(actions, m.Open) == []
    assert kinds(actions, m.Note) == [("failing", "failed", False)]
    assert state.consecutive_failures == 2


def test_a_failure_with_a_retry_to_follow_changes_nothing(clock) -> None:
    state, actions = fail(m.State(), m.Rules(), clock, final=False)
    assert actions == [] and state == m.State()


@pytest.mark.parametrize("status", ["timed_out", "interrupted"])
def test_timeouts_and_interruptions_are_failures(clock, status) -> None:
    _, actions = fail(m.State(), m.Rules(), clock, status=status)
    assert kinds(actions, m.Open) == [("failing", "failed", True)]


@pytest.mark.parametrize("status", ["skipped", "cancelled"])
def test_skipped_and_cancelled_runs_are_neither_failures_nor_successes(clock, status) -> None:
    state = m.State(consecutive_failures=2)
    assert fail(state, m.Rules(), clock, status=status) == (state, [])


def test_failing_opens_after_the_configured_number_in_a_row(clock) -> None:
    rules = m.Rules(after_failures=3)
    state = m.State()
    for run_id in (1, 2):
        state, actions = fail(state, rules, clock, run_id)
        assert actions == []
    state, actions = fail(state, rules, clock, 3)
    assert kinds(actions, m.Open) == [("failing", "failed", True)]


def test_a_success_in_between_resets_the_count(clock) -> None:
    rules = m.Rules(after_failures=2)
    state, _ = fail(m.State(), rules, clock, 1)
    state, _ = m.after_outcome(
        state, rules, status="succeeded", final=True, run_id=2, now=clock.now()
    )
    state, actions = fail(state, rules, clock, 3)
    assert actions == [] and state.consecutive_failures == 1


def test_the_next_success_closes_failing_as_recovered(clock) -> None:
    state, _ = fail(m.State(), m.Rules(), clock)
    clock.advance(30)
    state, actions = m.after_outcome(
        state, m.Rules(), status="succeeded", final=True, run_id=2, now=clock.now()
    )
    assert kinds(actions, m.Close) == [("failing", "recovered", True)]
    assert state.open == {} and state.consecutive_failures == 0


def test_recovery_is_quiet_when_the_rules_say_so(clock) -> None:
    rules = m.Rules(notify_recovery=False)
    state, _ = fail(m.State(), rules, clock)
    _, actions = m.after_outcome(
        state, rules, status="succeeded", final=True, run_id=2, now=clock.now()
    )
    assert kinds(actions, m.Close) == [("failing", "recovered", False)]


def test_events_left_out_of_notify_open_incidents_without_notifying(clock) -> None:
    rules = m.Rules(notify=frozenset({"late"}))
    _, actions = fail(m.State(), rules, clock)
    assert kinds(actions, m.Open) == [("failing", "failed", False)]


def test_a_still_failing_schedule_repeats_its_notification_after_the_interval(clock) -> None:
    rules = m.Rules(repeat_every=3600)
    state, _ = fail(m.State(), rules, clock, 1)
    clock.advance(1800)
    state, actions = fail(state, rules, clock, 2)
    assert kinds(actions, m.Note) == [("failing", "failed", False)]
    clock.advance(1800)
    state, actions = fail(state, rules, clock, 3)
    assert kinds(actions, m.Note) == [("failing", "failed", True)]
    clock.advance(60)
    _, actions = fail(state, rules, clock, 4)
    assert kinds(actions, m.Note) == [("failing", "failed", False)]


def test_the_breaker_pauses_after_n_failures_and_opens_auto_paused(clock) -> None:
    rules = m.Rules(pause_after=2)
    state, actions = fail(m.State(), rules, clock, 1)
    assert not any(isinstance(a, m.Pause) for a in actions)
    state, actions = fail(state, rules, clock, 2)
    assert [a.reason for a in actions if isinstance(a, m.Pause)] == [
        "auto-paused after 2 final failures in a row"
    ]
    assert kinds(actions, m.Open) == [("auto_paused", "auto_paused", True)]
    assert state.paused
    _, actions = fail(state, rules, clock, 3)
    assert kinds(actions, m.Open) == [] and not any(isinstance(a, m.Pause) for a in actions)


def test_resuming_closes_auto_paused_and_resets_the_count(clock) -> None:
    state, _ = fail(m.State(), m.Rules(pause_after=1), clock)
    state, actions = m.resumed(state, by="ann")
    assert kinds(actions, m.Close) == [("auto_paused", "closed", False)]
    assert state.consecutive_failures == 0 and not state.paused
    assert "failing" in state.open  # failing lasts until a success


def test_a_probe_that_succeeds_resumes_and_closes_everything(clock) -> None:
    rules = m.Rules(pause_after=1, probe_after=600)
    state, _ = fail(m.State(), rules, clock)
    assert not m.probe_due(state, rules, last_probe_at=None, now=clock.advance(599))
    assert m.probe_due(state, rules, last_probe_at=None, now=clock.advance(1))
    state, actions = m.after_outcome(
        state, rules, status="succeeded", final=True, run_id=9, now=clock.now(), probe=True
    )
    assert kinds(actions, m.Close) == [
        ("failing", "recovered", True),
        ("auto_paused", "closed", False),
    ]
    assert any(isinstance(a, m.Resume) for a in actions) and state.open == {}


def test_a_probe_that_fails_keeps_the_schedule_paused_and_waits_again(clock) -> None:
    rules = m.Rules(pause_after=1, probe_after=600)
    state, _ = fail(m.State(), rules, clock)
    probe_at = clock.advance(600)
    state, actions = fail(state, rules, clock, 9, probe=True)
    assert not any(isinstance(a, m.Pause | m.Open | m.Resume) for a in actions)
    assert kinds(actions, m.Note)[-1] == ("auto_paused", "note", False)
    assert not m.probe_due(state, rules, last_probe_at=probe_at, now=clock.advance(300))
    assert m.probe_due(state, rules, last_probe_at=probe_at, now=clock.advance(300))


def test_no_probe_without_a_cool_down(clock) -> None:
    state, _ = fail(m.State(), m.Rules(pause_after=1), clock)
    assert not m.probe_due(
        state, m.Rules(pause_after=1), last_probe_at=None, now=clock.advance(10**6)
    )


def test_a_missed_slot_opens_late_once_and_an_on_time_slot_closes_it(clock) -> None:
    slot = clock.now()
    state, actions = m.slot_missed(m.State(), m.Rules(), slot=slot, grace=60, now=clock.advance(61))
    assert kinds(actions, m.Open) == [("late", "late", True)]
    assert "passed its 60s grace" in actions[0].text
    assert m.slot_missed(state, m.Rules(), slot=slot, grace=60, now=clock.advance(60))[1] == []
    state, actions = m.slot_on_time(state, slot=clock.now(), now=clock.now())
    assert kinds(actions, m.Close) == [("late", "closed", False)]
    assert m.slot_on_time(state, slot=clock.now(), now=clock.now())[1] == []


def test_pausing_by_hand_ends_a_late_incident(clock) -> None:
    state, _ = m.slot_missed(m.State(), m.Rules(), slot=clock.now(), grace=1, now=clock.advance(5))
    state, actions = m.stopped(state, why="paused by ann")
    assert kinds(actions, m.Close) == [("late", "closed", False)] and state.open == {}


def test_a_run_past_its_threshold_is_stuck_once_and_its_end_closes_it(clock) -> None:
    rules = m.Rules()
    assert (
        m.run_overdue(m.State(), rules, run_id=5, running_for=100, threshold=120, now=clock.now())[
            1
        ]
        == []
    )
    state, actions = m.run_overdue(
        m.State(), rules, run_id=5, running_for=121, threshold=120, now=clock.now()
    )
    assert kinds(actions, m.Open) == [("stuck", "stuck", True)]
    assert (
        m.run_overdue(state, rules, run_id=5, running_for=500, threshold=120, now=clock.now())[1]
        == []
    )
    assert m.run_gone(state, run_id=6, status="succeeded")[1] == []
    state2, actions = m.run_gone(state, run_id=5, status="interrupted")
    assert kinds(actions, m.Close) == [("stuck", "closed", False)] and state2.open == {}
    # ...and the stuck run's own outcome closes it too.
    _, actions = m.after_outcome(
        state, rules, status="succeeded", final=True, run_id=5, now=clock.now()
    )
    assert kinds(actions, m.Close) == [("stuck", "closed", False)]


def test_the_stuck_threshold_is_the_maximum_or_k_times_the_recent_p95() -> None:
    assert m.stuck_threshold(m.Rules(max_duration=30), []) == 30
    assert m.stuck_threshold(m.Rules(), [1, 2, 3, 4]) is None  # too few samples
    samples = [10.0] * 19 + [100.0]
    assert m.stuck_threshold(m.Rules(stuck_factor=3), samples) == 60.0  # floor of 60 s
    assert m.stuck_threshold(m.Rules(stuck_factor=3, stuck_min_seconds=1), samples) == 30.0
    assert m.stuck_threshold(m.Rules(stuck_factor=None), samples) is None


def test_rules_are_validated_with_the_key_named() -> None:
    assert clean_rules({"notify": ["late", "failed"], "after_failures": 2}) == {
        "notify": ["failed", "late"],
        "after_failures": 2,
    }
    for bad, message in (
        ({"nope": 1}, "unknown alert rule(s) nope"),
        ({"notify": ["boom"]}, "notify: unknown event(s) boom"),
        ({"after_failures": 0}, "after_failures must be a whole number"),
        ({"repeat_every": -1}, "repeat_every must be a positive number"),
    ):
        with pytest.raises(InvalidRules, match=message.replace("(", r"\(").replace(")", r"\)")):
            clean_rules(bad)
