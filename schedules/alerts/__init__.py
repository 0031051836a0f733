"""Alerts: incidents (failing, late, stuck, auto-paused), their rules, and the outbox they fill.

`machine.py` is the pure state machine (no Django); `rules.py` resolves the
rules of a schedule; `record.py` is its database edge, called by the
scheduler in the transaction of the outcome that caused it; `checks.py` holds
the sweeps any live scheduler runs (late slots, stuck runs, half-open probes).
"""
