"""Hooks around runs: the one documented home of "when a run starts or finishes".

Receivers get `run` (a Run) and, for the finish signals, `final` (True when no
retry follows). They run in the scheduler process on a thread of their own,
in order: a slow receiver never delays claims or other runs, and a failing
one is logged and breaks nothing.

- `run_started`: a run begins executing.
- `run_finished`: every terminal outcome: succeeded, failed, timed out,
  skipped (also at claim time), cancelled, interrupted (by crash recovery).
- `run_succeeded`: a run succeeded (the on_success hook of the original design).
- `run_failed`: a final failure: failed, timed out or interrupted with no retry
  left (the on_failure hook).
"""

from __future__ import annotations

from django.dispatch import Signal

run_started = Signal()
run_finished = Signal()
run_succeeded = Signal()
run_failed = Signal()
