"""Execution on a worker pool through Django's tasks framework (`dispatch="enqueue"`).

The scheduler claims the slot and records a queued run as usual, then enqueues
`execute_run(run_id)` on the configured TASKS backend. A worker (for the
database backend: `manage.py db_worker`) claims the run (queued -> running)
and executes it through the same pipeline, so timeouts, retries, overlap and
the outcome in the run record work as they do in the scheduler.

With the database backend the enqueue happens in the claim's transaction, so a
run is never recorded without its task or the reverse.
"""

from __future__ import annotations

from datetime import datetime

from django.tasks import task

from ..models import Dispatch, Run


@task
def execute_run(run_id: int) -> str:
    """The worker side: claim the run, execute it, record the outcome."""
    # Deferred: worker imports the engine, which imports claims, which imports this module.
    from .worker import worker_runtime

    return worker_runtime().execute(run_id)


def enqueue(run: Run, *, run_after: datetime | None = None) -> None:
    """Hand a queued run to the worker pool (no-op for runs the scheduler executes)."""
    if run.dispatch != Dispatch.ENQUEUE:
        return
    queued = execute_run.using(run_after=run_after) if run_after else execute_run
    queued.enqueue(run.pk)
