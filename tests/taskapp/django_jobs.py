"""Django tasks (django.tasks) that tests declare to the scheduler themselves.

Django tasks must live at module level; this module is not a tasks.py, so
nothing declares them until a test does (with its registry cleaned after).
"""

from __future__ import annotations

from django.tasks import task


@task(backend="pool", queue_name="reports")
def nightly() -> None:
    """Quiet."""


@task(backend="pool", queue_name="reports", priority=-5)
def flaky() -> None:
    raise RuntimeError("upstream down")


@task(backend="pool", queue_name="reports", takes_context=True)
def with_context(context) -> None:
    """Wants the worker's TaskContext."""


@task(backend="now")
def immediate() -> None:
    """On a backend that cannot defer."""
