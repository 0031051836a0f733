"""Database work from the event loop: on threads of its own, and never lost to a cancel."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from django.db import DatabaseError, connection


def db_call(fn: Callable[..., Any], kwargs: dict) -> Any:
    """Call `fn` on the calling (database) thread."""
    try:
        return fn(**kwargs)
    except DatabaseError:
        # A broken connection is reopened by the next query.
        connection.close()
        raise


async def despite_cancel[T](awaitable: Awaitable[T]) -> T:
    """Await to the end even if the awaiting task is cancelled: a run's outcome is
    written once its body has ended, whatever stops the scheduler meanwhile."""
    future = asyncio.ensure_future(awaitable)
    while True:
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if future.cancelled():
                raise
