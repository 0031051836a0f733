"""Sillo Dash schedules: declare tasks with `@schedules.task(...)`."""

from __future__ import annotations

from .registry import task

__all__ = ["task"]
