"""Channel consumers: wake hints for the scheduler, live run events for browsers."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from types import SimpleNamespace
from urllib.parse import parse_qs

from channels.consumer import AsyncConsumer
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from .access import VIEW, abilities
from .live_render import list_rows, shared_render
from .scheduler.events import ALL_RUNS_GROUP, schedule_group

logger = logging.getLogger(__name__)

VIEWS = ("list", "detail", "log")
MAX_PAGE_SCHEDULES = 200


class SchedulerWakeConsumer(AsyncConsumer):
    """Wake hints ("scheduler.wake") make the local schedulers look at once."""

    async def scheduler_wake(self, message: dict) -> None:
        from .scheduler.engine import wake_local

        wake_local()


class RunEventsConsumer(AsyncWebsocketConsumer):
    """Push-only: run events as HTML fragments that htmx swaps by id.

    `?view=list|detail|log` picks the fragments; `?schedule=<id>` narrows the
    stream to one schedule; the list view gets only the schedules of its page
    (`?schedules=<id>,<id>,...`). Anonymous users and users without the view
    permission are refused (close code 4403). Fragments are rendered once for
    many clients (live_render.py).
    """

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await _can_view(user):
            await self.close(code=4403)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.view = (query.get("view") or ["log"])[0]
        if self.view not in VIEWS:
            self.view = "log"
        schedule = (query.get("schedule") or [""])[0]
        page = [int(i) for i in (query.get("schedules") or [""])[0].split(",") if i.isdigit()]
        if schedule.isdigit():
            self.groups = [schedule_group(int(schedule))]
        elif self.view == "list":
            self.groups = [schedule_group(i) for i in page[:MAX_PAGE_SCHEDULES]]
        else:
            self.groups = [ALL_RUNS_GROUP]
        # Rows show buttons by permission: users who may do the same share renders.
        self.abilities = tuple(sorted((await _abilities(user)).items()))
        self._rows: dict[int, asyncio.Future] = {}  # list rows asked for, not yet sent
        self._sending: set[asyncio.Task] = set()
        for group in self.groups:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        since = (query.get("since") or [""])[0]
        after = (query.get("after") or ["0"])[0]
        if self.view == "log" and since and after.isdigit():
            # Events between the page's render and this connect are sent now.
            for html in await self._log_rows_since(since, int(after), schedule):
                await self.send(text_data=html)

    async def disconnect(self, code: int) -> None:
        for task in getattr(self, "_sending", ()):
            task.cancel()
        for group in getattr(self, "groups", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Actions go through HTTP (with CSRF and permissions); input here is ignored."""

    async def run_event(self, event: dict) -> None:
        run = event["run"]
        if self.view == "list":
            self._send_row_when_rendered(run["schedule_id"], (run["id"], run["status"]))
            return
        try:
            if self.view == "log":  # the same for everyone: made of the event alone
                key = ("log", run["id"], run["status"])
                html = await shared_render(key, lambda: _log_row(run))
            else:
                key = ("detail", run["schedule_id"], run["id"], run["status"], self.abilities)
                html = await shared_render(key, lambda: self._run_now_fragment(run))
        except Exception:
            logger.exception("live fragment for run %s not rendered", run.get("id"))
            return
        if html:
            await self.send(text_data=html)

    def _send_row_when_rendered(self, schedule_id: int, event: tuple) -> None:
        """Ask for the row without waiting, so that events keep flowing meanwhile."""
        future = list_rows().row(schedule_id, event, self.scope["user"], self.abilities)
        if self._rows.get(schedule_id) is future:
            return  # already on its way, rendered after this event
        self._rows[schedule_id] = future
        task = asyncio.ensure_future(self._send_row(schedule_id, future))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send_row(self, schedule_id: int, future: asyncio.Future) -> None:
        try:
            html = await asyncio.shield(future)
        except Exception:
            logger.exception("live row of schedule %s not rendered", schedule_id)
            html = ""
        finally:
            if self._rows.get(schedule_id) is future:
                del self._rows[schedule_id]
        if html:
            await self.send(text_data=html)

    @database_sync_to_async
    def _log_rows_since(self, since: str, after: int, schedule: str) -> list[str]:
        """Runs created after run `after` or finished after `since` (both indexed)."""
        from django.db.models import Q

        from .models import Run

        try:
            moment = datetime.fromisoformat(since)
        except ValueError:
            return []
        runs = Run.objects.filter(Q(pk__gt=after) | Q(finished_at__gt=moment))
        if schedule.isdigit():
            runs = runs.filter(schedule_id=int(schedule))
        recent = list(runs.order_by("-pk")[:100])
        for run in recent:
            run.at = run.finished_at or run.started_at or run.queued_at
        recent.sort(key=lambda run: run.at, reverse=True)
        return [
            render_to_string("schedules/_log_row.html", {"run": run, "oob": True})
            for run in reversed(recent)
        ]

    @database_sync_to_async
    def _run_now_fragment(self, run: dict) -> str:
        from .models import Schedule
        from .rows import build_rows

        schedule = Schedule.objects.filter(pk=run["schedule_id"]).first()
        if schedule is None:
            return ""
        (row,) = build_rows([schedule], self.scope["user"])
        return render_to_string("schedules/_run_now.html", {"row": row, "oob": True, "event": run})


async def _log_row(payload: dict) -> str:
    return render_to_string("schedules/_log_row.html", {"run": _as_run(payload), "oob": True})


def _as_run(payload: dict) -> SimpleNamespace:
    """An event payload shaped like a Run for the shared row template."""
    times = {
        key: datetime.fromisoformat(payload[key]) if payload.get(key) else None
        for key in ("queued_at", "started_at", "finished_at")
    }
    at = times["finished_at"] or times["started_at"] or times["queued_at"]
    return SimpleNamespace(**{**payload, **times, "at": at, "schedule_code": payload["code"]})


@database_sync_to_async
def _can_view(user) -> bool:
    return user.has_perm(VIEW)


@database_sync_to_async
def _abilities(user) -> dict[str, bool]:
    return abilities(user)
