"""SQLite's WAL checkpoints, kept off the scheduler's database thread.

In WAL mode, the connection whose commit takes the log past 1,000 pages also
copies the log back into the database file and syncs it. On a slow disk that
one commit takes 0.1 to 0.4 s. On the scheduler's database thread it held
every claim and outcome behind it: one benchmark run in five read a p99
lateness of 93 to 383 ms, where the others read 10 to 20 ms.

So a thread of its own runs a PASSIVE checkpoint, which waits for no reader
and no writer, at most once a second (from the scheduler's passes, or from a
django.tasks worker's heartbeat). The database thread's own commits
checkpoint only past OWN_CHECKPOINT_PAGES: while it writes without a pause,
a checkpoint beside it never catches the log's very end, and SQLite starts
the log over only once all of it has been copied back. That commit copies
what is left (the last second's pages, not 4 MB), the log then starts over,
and the log stays bounded even if the checkpointer falls behind. Other
connections (the web server, the CLI) keep SQLite's own rule. PostgreSQL has
no such step: there this module does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.db import connection, connections
from django.db.backends.signals import connection_created

logger = logging.getLogger(__name__)

CHECKPOINT_INTERVAL = 1.0  # seconds between checkpoints (one with nothing to copy is ~0.1 ms)
# Pages (4 KB each by default) past which the database thread's commit checkpoints itself.
OWN_CHECKPOINT_PAGES = 10_000
# Bytes the log file is cut back to when it starts over (it would keep its largest size).
LOG_FILE_LIMIT = 4 * 1024 * 1024

_thread_state = threading.local()


def leave_to_the_checkpointer() -> None:
    """Set on a thread (a thread pool's initializer): its SQLite connections, opened now
    or again after an error, checkpoint on commit only past OWN_CHECKPOINT_PAGES."""
    _thread_state.leaves_checkpoints = True


def _on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor == "sqlite" and getattr(_thread_state, "leaves_checkpoints", False):
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint={int(OWN_CHECKPOINT_PAGES)}")
            cursor.execute(f"PRAGMA journal_size_limit={int(LOG_FILE_LIMIT)}")


connection_created.connect(_on_connection_created, dispatch_uid="sillo-checkpoint-cap")


class Checkpointer:
    """Runs a PASSIVE checkpoint on its own thread when asked, one at a time."""

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sillo-checkpoint")
        self._last: Future | None = None

    def start(self) -> None:
        """Checkpoint now, unless the last one is still under way (never waited for)."""
        if connection.vendor != "sqlite" or (self._last is not None and not self._last.done()):
            return
        self._last = self._thread.submit(checkpoint)

    async def close(self) -> None:
        if self._last is not None:
            await asyncio.wrap_future(self._last)
        self._thread.submit(connections.close_all)
        self._thread.shutdown(wait=True)


def checkpoint() -> tuple[int, int, int] | None:
    """Copy what the log holds back into the database file, as far as readers allow:
    (1 if it could not start, pages in the log, pages copied), as SQLite says."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
            return cursor.fetchone()
    except Exception as exc:  # the next one tries again; SQLite's log only grows meanwhile
        logger.warning("WAL checkpoint failed: %s", exc)
        with contextlib.suppress(Exception):  # a broken connection is reopened next time
            connection.close()
        return None
