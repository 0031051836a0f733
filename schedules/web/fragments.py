"""Every live fragment the websocket sends, rendered once for many clients.

A run event reaches every open page; rendering its fragment per client made
20 open pages cost 20 renders (and, for rows read from the database, 60
queries) per event, and at 100 events a second they fell behind. Here a
fragment is rendered once per process for every client that would get the
same HTML: the same event, and for rows with buttons, the same abilities.
State is per event loop (one in daphne; one per test).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async
from django.template.loader import render_to_string
from django.utils.html import escape

from ..events import RunEvent, RunOutputEvent, ScheduleEvent
from ..models import Run, Schedule
from ..selectors import recent_runs
from .rows import build_rows
from .run_page import run_context

FRAGMENT_TTL = 1.0  # seconds a rendered event fragment serves later clients
_fragments: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_batchers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def shared_render(key: tuple, render: Callable[[], Awaitable[str]]) -> str:
    """One render per key for every client; clients arriving while it runs wait for it."""
    cache = _fragments.setdefault(asyncio.get_running_loop(), {})
    now = time.monotonic()
    entry = cache.get(key)
    if entry is None or now - entry[0] > FRAGMENT_TTL:
        if len(cache) > 1000:
            for old in [k for k, (at, _) in cache.items() if now - at > FRAGMENT_TTL]:
                del cache[old]
        entry = cache[key] = (now, asyncio.ensure_future(render()))
    try:
        return await asyncio.shield(entry[1])
    except Exception:
        cache.pop(key, None)
        raise


class ListRows:
    """Schedule rows of the list page, rendered in batches from the database.

    A row shows the schedule's state when it is rendered, so an event needs a
    render that started after the event was published; any render started
    after some client received that event qualifies. An event joins the
    render already running or just done for its schedule if that render was
    asked for by the same event, else the batch that has not started yet.
    Every client with the same abilities shares the result. While one batch
    renders (one `build_rows`: three queries for any number of rows), the next
    gathers, so under load batches grow and the cost per event falls.
    """

    def __init__(self) -> None:
        # abilities -> schedule id -> (future HTML, the events it answers)
        self._waiting: dict[tuple, dict[int, tuple[asyncio.Future, set]]] = {}
        self._rendering: dict[tuple, dict[int, tuple[asyncio.Future, set]]] = {}
        self._done: dict[tuple, dict[int, tuple[asyncio.Future, set, float]]] = {}
        self._flushers: dict[tuple, asyncio.Task] = {}

    def row(self, schedule_id: int, event: tuple, user: Any, abilities: tuple) -> asyncio.Future:
        """A future for the row's HTML ("" if the schedule is gone), fresh for `event`."""
        running = self._rendering.get(abilities, {}).get(schedule_id)
        if running is not None and event in running[1]:
            return running[0]
        done = self._done.get(abilities, {}).get(schedule_id)
        if done is not None and event in done[1] and time.monotonic() - done[2] < FRAGMENT_TTL:
            return done[0]
        waiting = self._waiting.setdefault(abilities, {})
        if schedule_id not in waiting:
            waiting[schedule_id] = (asyncio.get_running_loop().create_future(), set())
        future, events = waiting[schedule_id]
        events.add(event)
        flusher = self._flushers.get(abilities)
        if flusher is None or flusher.done():
            self._flushers[abilities] = asyncio.ensure_future(self._flush(abilities, user))
        return future

    async def _flush(self, abilities: tuple, user: Any) -> None:
        while self._waiting.get(abilities):
            batch = self._rendering[abilities] = self._waiting.pop(abilities)
            try:
                rendered = await _render_rows(list(batch), user)
            except Exception as exc:
                rendered, failure = {}, exc
            else:
                failure = None
            finally:
                del self._rendering[abilities]
            done = self._done.setdefault(abilities, {})
            now = time.monotonic()
            for schedule_id, (future, events) in batch.items():
                if not future.done():
                    if failure is None:
                        future.set_result(rendered.get(schedule_id, ""))
                    else:
                        future.set_exception(failure)
                done[schedule_id] = (future, events, now)
            for schedule_id in [k for k, (*_, at) in done.items() if now - at > FRAGMENT_TTL]:
                del done[schedule_id]


def list_rows() -> ListRows:
    loop = asyncio.get_running_loop()
    batcher = _batchers.get(loop)
    if batcher is None:
        batcher = _batchers[loop] = ListRows()
    return batcher


@database_sync_to_async
def _render_rows(schedule_ids: list[int], user: Any) -> dict[int, str]:
    schedules = list(Schedule.objects.filter(pk__in=schedule_ids))
    return {
        row.pk: render_to_string("schedules/list.html#row", {"row": row, "oob": True})
        for row in build_rows(schedules, user)
    }


async def log_row(event: RunEvent) -> str:
    """The live log's row for a run event: the same for everyone, made of the event alone."""
    return await shared_render(
        ("log", event.id, event.status),
        _async(lambda: render_to_string("schedules/_log_row.html", {"run": event, "oob": True})),
    )


async def run_now_state(event: RunEvent, user: Any, abilities: tuple) -> str:
    """The schedule page's run-now button and state after a run event."""
    key = ("detail", event.schedule_id, event.id, event.status, abilities)
    return await shared_render(key, lambda: _run_now_state(event, user))


@database_sync_to_async
def _run_now_state(event: RunEvent, user: Any) -> str:
    schedule = Schedule.objects.filter(pk=event.schedule_id).first()
    if schedule is None:
        return ""
    (row,) = build_rows([schedule], user)
    return render_to_string("schedules/_run_now.html", {"row": row, "oob": True, "event": event})


async def run_page_state(event: RunEvent, user: Any, abilities: tuple) -> str:
    """The run page after an event of its run: its state, and once it ended, its final
    part (result, error, the stored output) in place of the live one."""
    return await run_page_now(event.id, event.status, user, abilities)


async def run_page_now(run_id: int, status: str, user: Any, abilities: tuple) -> str:
    key = ("run", run_id, status, abilities)
    return await shared_render(key, lambda: _run_page_state(run_id, user))


@database_sync_to_async
def run_status(run_id: int) -> str | None:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()


@database_sync_to_async
def _run_page_state(run_id: int, user: Any) -> str:
    run = Run.objects.for_page().filter(pk=run_id).first()
    if run is None:
        return ""
    context = {**run_context(run, user), "oob": True}
    html = render_to_string("schedules/run_detail.html#state", context)
    if run.is_finished:
        html += render_to_string("schedules/run_detail.html#final", context)
    return html


VERBS = {
    "create": "created", "edit": "edited", "pause": "paused", "resume": "resumed",
    "cancel": "cancelled", "reactivate": "reactivated", "reset": "reset to its code default",
    "delete": "deleted", "import": "changed by an import",
}  # fmt: skip


async def schedule_change(event: ScheduleEvent, *, view: str, username: str) -> str:
    """What a page showing a changed schedule learns: a notice naming who did what,
    and on the schedule page its status and fresh-state prompt (its verbs no longer
    apply); on the list a deleted schedule's row goes (other rows re-render by id)."""
    key = ("schedule", event.schedule_id, event.action, event.at, view, username == event.actor)
    return await shared_render(key, lambda: _schedule_change(event, view, username))


@database_sync_to_async
def _schedule_change(event: ScheduleEvent, view: str, username: str) -> str:
    status = Schedule.objects.filter(pk=event.schedule_id).values_list("status", flat=True).first()
    context = {
        "event": event,
        "view": view,
        "gone": status is None,
        "status": status,
        "verb": VERBS.get(event.action, event.action),
        "who": "you" if username and username == event.actor else event.actor or "the code",
        "at": datetime.fromisoformat(event.at),
    }
    return render_to_string("schedules/_schedule_change.html", context)


async def run_row(event: RunEvent, *, prepend: bool) -> str:
    """A row of the runs page for a run event: new on top, or in place of its row."""
    context = {"run": event, "oob": True, "prepend": prepend}
    return await shared_render(
        ("runrow", event.id, event.status, prepend),
        _async(lambda: render_to_string("schedules/_run_row.html", context)),
    )


def output_chunk(event: RunOutputEvent, shown: int) -> str:
    """Text to append to the run page's output, which shows `shown` characters already:
    the overlap is dropped, a gap (text written before the page connected) is noted."""
    text, offset = event.text, event.offset
    if offset + len(text) <= shown:
        return ""
    if offset < shown:
        text = text[shown - offset :]
    elif offset > shown:
        missed = offset - shown
        note = f"{missed:,} characters not shown live: the whole output appears when the run ends"
        text = f"\n… [{note}] …\n{text}"
    return f'<div hx-swap-oob="beforeend:#run-output">{escape(text)}</div>'


@database_sync_to_async
def log_rows_since(*, since: datetime, after: int, schedule_id: int | None) -> list[str]:
    """Log rows of the runs a socket missed between its page's render and its connect."""
    runs = recent_runs(limit=100, schedule_id=schedule_id, after_id=after, finished_since=since)
    return [
        render_to_string("schedules/_log_row.html", {"run": run, "oob": True})
        for run in reversed(runs)
    ]


def _async(render: Callable[[], str]) -> Callable[[], Awaitable[str]]:
    async def rendered() -> str:
        return render()

    return rendered
