"""The websocket consumer of live pages: subscribe, check access, forward fragments."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from ..events import ALL_RUNS_GROUP, RunEvent, schedule_group
from . import fragments
from .access import VIEW, abilities

logger = logging.getLogger(__name__)

VIEWS = ("list", "detail", "log")
MAX_PAGE_SCHEDULES = 200


class RunEventsConsumer(AsyncWebsocketConsumer):
    """Push-only: run events as HTML fragments that htmx swaps by id.

    `?view=list|detail|log` picks the fragments; `?schedule=<id>` narrows the
    stream to one schedule; the list view gets only the schedules of its page
    (`?schedules=<id>,<id>,...`). Anonymous users and users without the view
    permission are refused (close code 4403). Fragments are rendered once for
    many clients (fragments.py).
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
            try:
                moment = datetime.fromisoformat(since)
            except ValueError:
                return
            missed = await fragments.log_rows_since(
                since=moment,
                after=int(after),
                schedule_id=int(schedule) if schedule.isdigit() else None,
            )
            for html in missed:
                await self.send(text_data=html)

    async def disconnect(self, code: int) -> None:
        for task in getattr(self, "_sending", ()):
            task.cancel()
        for group in getattr(self, "groups", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Actions go through HTTP (with CSRF and permissions); input here is ignored."""

    async def run_event(self, message: dict) -> None:
        event = RunEvent.unmarshal(message)
        if self.view == "list":
            self._send_row_when_rendered(event)
            return
        try:
            if self.view == "log":
                html = await fragments.log_row(event)
            else:
                html = await fragments.run_now_state(event, self.scope["user"], self.abilities)
        except Exception:
            logger.exception("live fragment for run %s not rendered", event.id)
            return
        if html:
            await self.send(text_data=html)

    def _send_row_when_rendered(self, event: RunEvent) -> None:
        """Ask for the row without waiting, so that events keep flowing meanwhile."""
        schedule_id = event.schedule_id
        future = fragments.list_rows().row(
            schedule_id, (event.id, event.status), self.scope["user"], self.abilities
        )
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
def _can_view(user) -> bool:
    return user.has_perm(VIEW)


@database_sync_to_async
def _abilities(user) -> dict[str, bool]:
    return abilities(user)
