"""The incident state machine: pure Python, no Django, driven by explicit times.

A schedule's alert state is its count of final failures in a row and its open
incidents (at most one of each kind). Each function takes the state, the rules
and what happened, and returns the actions to apply: open or close an
incident, add a line to its timeline, notify, pause the schedule. The database
edge (`record.py`) loads the state, applies the actions and saves, in the
transaction of the outcome that caused them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

FAILING, LATE, STUCK, AUTO_PAUSED = "failing", "late", "stuck", "auto_paused"
KINDS = (FAILING, LATE, STUCK, AUTO_PAUSED)
# Events a notification carries (the webhook's `event`).
EVENTS = ("failed", "recovered", "late", "stuck", "auto_paused", "test")
# Rules' `notify` names the incidents that notify when they open.
NOTIFIABLE = ("failed", "late", "stuck", "auto_paused")

SUCCEEDED = "succeeded"
ERRORS = ("failed", "timed_out", "interrupted")


@dataclass(frozen=True)
class Rules:
    """What opens incidents and what notifies (docs/alerts.md, "Rules")."""

    notify: frozenset[str] = frozenset(NOTIFIABLE)
    after_failures: int = 1
    repeat_every: float | None = None
    notify_recovery: bool = True
    late_after: float | None = None  # None: the schedule's misfire_grace
    max_duration: float | None = None
    stuck_factor: float | None = 5.0
    stuck_min_seconds: float = 60.0
    pause_after: int | None = None
    probe_after: float | None = None


@dataclass(frozen=True)
class OpenIncident:
    kind: str
    opened_at: datetime
    notified_at: datetime | None = None
    run_id: int | None = None


@dataclass(frozen=True)
class State:
    consecutive_failures: int = 0
    paused: bool = False
    open: dict[str, OpenIncident] = field(default_factory=dict)


@dataclass(frozen=True)
class Open:
    kind: str
    event: str
    text: str
    notify: bool
    run_id: int | None = None


@dataclass(frozen=True)
class Close:
    kind: str
    event: str
    text: str
    notify: bool
    run_id: int | None = None


@dataclass(frozen=True)
class Note:
    """A line on an open incident's timeline; `notify` repeats its notification."""

    kind: str
    event: str
    text: str
    notify: bool = False
    run_id: int | None = None


@dataclass(frozen=True)
class Pause:
    reason: str


@dataclass(frozen=True)
class Resume:
    """The half-open probe succeeded: the schedule is active again."""


Action = Open | Close | Note | Pause | Resume


def _with(state: State, **changes) -> State:
    return replace(state, **changes)


def _opened(state: State, action: Open, now: datetime) -> State:
    incident = OpenIncident(
        action.kind, now, notified_at=now if action.notify else None, run_id=action.run_id
    )
    return _with(state, open={**state.open, action.kind: incident})


def _closed(state: State, kind: str) -> State:
    return _with(state, open={k: v for k, v in state.open.items() if k != kind})


def after_outcome(
    state: State,
    rules: Rules,
    *,
    status: str,
    final: bool,
    run_id: int,
    now: datetime,
    probe: bool = False,
) -> tuple[State, list[Action]]:
    """A run ended with `status`; `final` says no retry follows."""
    actions: list[Action] = []
    stuck = state.open.get(STUCK)
    if stuck is not None and stuck.run_id == run_id:
        actions.append(Close(STUCK, "closed", f"run {run_id} ended: {status}", False, run_id))
        state = _closed(state, STUCK)
    if status == SUCCEEDED:
        state = _with(state, consecutive_failures=0)
        if FAILING in state.open:
            notify = rules.notify_recovery and "failed" in rules.notify
            actions.append(Close(FAILING, "recovered", f"run {run_id} succeeded", notify, run_id))
            state = _closed(state, FAILING)
        if probe and AUTO_PAUSED in state.open:
            text = f"probe run {run_id} succeeded: resumed"
            actions += [Close(AUTO_PAUSED, "closed", text, False, run_id), Resume()]
            state = _with(_closed(state, AUTO_PAUSED), paused=False)
        return state, actions
    if status not in ERRORS or not final:
        return state, actions
    count = state.consecutive_failures + 1
    state = _with(state, consecutive_failures=count)
    in_a_row = f"{count} final failure{'s' if count > 1 else ''} in a row"
    failing = state.open.get(FAILING)
    if failing is None:
        if count >= rules.after_failures:
            action = Open(
                FAILING,
                "failed",
                f"run {run_id} {status}: {in_a_row}",
                "failed" in rules.notify,
                run_id,
            )
            actions.append(action)
            state = _opened(state, action, now)
    else:
        since = failing.notified_at or failing.opened_at
        repeat = (
            rules.repeat_every is not None
            and "failed" in rules.notify
            and (now - since).total_seconds() >= rules.repeat_every
        )
        actions.append(
            Note(FAILING, "failed", f"run {run_id} {status}: {in_a_row}", repeat, run_id)
        )
        if repeat:
            state = _with(state, open={**state.open, FAILING: replace(failing, notified_at=now)})
    if probe and AUTO_PAUSED in state.open:
        actions.append(Note(AUTO_PAUSED, "note", f"probe run {run_id} {status}: still paused"))
    elif (
        rules.pause_after is not None
        and count >= rules.pause_after
        and not state.paused
        and AUTO_PAUSED not in state.open
    ):
        reason = f"auto-paused after {in_a_row}"
        action = Open(AUTO_PAUSED, "auto_paused", reason, "auto_paused" in rules.notify, run_id)
        actions += [Pause(reason), action]
        state = _with(_opened(state, action, now), paused=True)
    return state, actions


def slot_missed(
    state: State, rules: Rules, *, slot: datetime, grace: float, now: datetime
) -> tuple[State, list[Action]]:
    """A slot passed its grace without a run starting."""
    if LATE in state.open:
        return state, []
    late = (now - slot).total_seconds()
    action = Open(
        LATE,
        "late",
        f"slot {slot.isoformat()} passed its {grace:g}s grace without a run "
        f"starting ({late:.0f}s late)",
        "late" in rules.notify,
    )
    return _opened(state, action, now), [action]


def slot_on_time(state: State, *, slot: datetime, now: datetime) -> tuple[State, list[Action]]:
    """A slot fired within its grace: a late incident is over."""
    if LATE not in state.open:
        return state, []
    action = Close(LATE, "closed", f"slot {slot.isoformat()} fired on time", False)
    return _closed(state, LATE), [action]


def run_overdue(
    state: State,
    rules: Rules,
    *,
    run_id: int,
    running_for: float,
    threshold: float,
    now: datetime,
) -> tuple[State, list[Action]]:
    """A run has been running longer than its expected duration."""
    if STUCK in state.open or running_for <= threshold:
        return state, []
    action = Open(
        STUCK,
        "stuck",
        f"run {run_id} running for {running_for:.0f}s, expected at most {threshold:.0f}s",
        "stuck" in rules.notify,
        run_id,
    )
    return _opened(state, action, now), [action]


def run_gone(state: State, *, run_id: int, status: str) -> tuple[State, list[Action]]:
    """The stuck run is no longer running (ended, interrupted, cancelled elsewhere)."""
    stuck = state.open.get(STUCK)
    if stuck is None or stuck.run_id != run_id:
        return state, []
    return _closed(state, STUCK), [
        Close(STUCK, "closed", f"run {run_id} ended: {status}", False, run_id)
    ]


def resumed(state: State, *, by: str) -> tuple[State, list[Action]]:
    """An operator resumed the schedule: the breaker closes and counts from zero."""
    state = _with(state, consecutive_failures=0, paused=False)
    if AUTO_PAUSED not in state.open:
        return state, []
    return _closed(state, AUTO_PAUSED), [Close(AUTO_PAUSED, "closed", f"resumed by {by}", False)]


def stopped(state: State, *, why: str) -> tuple[State, list[Action]]:
    """Paused by hand, cancelled or completed: late no longer applies."""
    if LATE not in state.open:
        return state, []
    return _closed(state, LATE), [Close(LATE, "closed", why, False)]


def probe_due(state: State, rules: Rules, *, last_probe_at: datetime | None, now: datetime) -> bool:
    """Half-open: one probe run once the cool-down has passed since pausing or the last probe."""
    incident = state.open.get(AUTO_PAUSED)
    if incident is None or rules.probe_after is None:
        return False
    since = max(incident.opened_at, last_probe_at or incident.opened_at)
    return (now - since).total_seconds() >= rules.probe_after


def stuck_threshold(rules: Rules, recent_durations: Sequence[float]) -> float | None:
    """Seconds after which a run is stuck: the schedule's maximum, else k x recent p95.

    The p95 needs at least 5 successful runs, and the threshold is at least
    `stuck_min_seconds` so that millisecond tasks do not page on a hiccup.
    """
    if rules.max_duration is not None:
        return rules.max_duration
    if rules.stuck_factor is None or len(recent_durations) < 5:
        return None
    ordered = sorted(recent_durations)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return max(rules.stuck_min_seconds, rules.stuck_factor * p95)
