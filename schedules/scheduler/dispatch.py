"""Execution on a worker pool through Django's tasks framework (`dispatch="enqueue"`).

The scheduler claims the slot and records a queued run as usual, then enqueues
`execute_run(run_id)` on a TASKS backend: the default one, or, for a task
declared on a Django task (`@schedules.task` over `@task`), that task's own
backend, queue and priority. A worker of that backend (for the database
backend: `manage.py db_worker`) claims the run (queued -> running) and
executes the function through the same pipeline, so timeouts, retries,
overlap and the outcome in the run record work as they do in the scheduler.

With the database backend the enqueue happens in the claim's transaction, so a
run is never recorded without its task or the reverse.
"""

from __future__ import annotations

from datetime import datetime

from django.tasks import Task, task

from ..models import Dispatch, Run
from ..registry import registry


@task
def execute_run(run_id: int) -> str:
    """The worker side: claim the run, execute it, record the outcome."""
    # Deferred: worker imports the engine, which imports claims, which imports this module.
    from .worker import worker_runtime

    return worker_runtime().execute(run_id)


def target_of(task_name: str) -> Task:
    """`execute_run` on the backend, queue and priority the run's task names.

    A Django task's runs go where the task itself would; any other task's runs
    go to the default backend's default queue.
    """
    declaration = registry.get(task_name)
    own = declaration.django_task if declaration is not None else None
    if own is None:
        return execute_run
    return execute_run.using(backend=own.backend, queue_name=own.queue_name, priority=own.priority)


def enqueue(run: Run, *, run_after: datetime | None = None) -> None:
    """Hand a queued run to the worker pool (no-op for runs the scheduler executes)."""
    if run.dispatch != Dispatch.ENQUEUE:
        return
    target = target_of(run.task_name)
    (target.using(run_after=run_after) if run_after else target).enqueue(run.pk)


def enqueue_problem(task_name: str) -> str:
    """Why this task's runs cannot go to a worker pool (`dispatch="enqueue"`), or "".

    A backend that cannot defer (Django's default, ImmediateBackend) would run
    `execute_run` at once, inside the transaction that records the run, and the
    run would stay queued; retries and catch-ups need run_after too.
    """
    target = target_of(task_name)
    try:
        backend = target.get_backend()
    except Exception as exc:  # noqa: BLE001 - a misconfigured TASKS setting, said here
        return f"the TASKS backend '{target.backend}' cannot be loaded: {exc}"
    if not backend.supports_defer:
        return (
            f"the TASKS backend '{target.backend}' ({type(backend).__name__}) cannot defer "
            "tasks; enqueue needs one with workers (e.g. django-tasks-db), or use inline"
        )
    return ""
