"""Hooks around runs. Receivers get `run` (a Run); a failing receiver is logged only."""

from __future__ import annotations

from django.dispatch import Signal

run_started = Signal()
run_finished = Signal()
