"""Sillo Dash schedules: declare tasks with `@schedules.task(...)`.

A Django task (`django.tasks`) is scheduled as it is: `@schedules.task(...)`
stacked on its `@task`, or `schedules.schedule(the_task, cron=...)`.
"""

from __future__ import annotations

from .registry import schedule, task

__all__ = ["schedule", "task"]
