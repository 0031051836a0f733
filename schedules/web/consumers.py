"""The websocket consumer of live pages: subscribe, check access, forward fragments."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable
from datetime import UTC, datetime
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from ..events import (
    ALL_RUNS_GROUP,
    SCHEDULES_GROUP,
    RunEvent,
    RunOutputEvent,
    ScheduleEvent,
    run_group,
    schedule_group,
    unmarshal_run_events,
)
from ..params import parse_id, parse_ids
from ..run_filters import RunFilters
from . import fragments
from .access import VIEW, abilities
from .socket_access import RecheckedSocket

logger = logging.getLogger(__name__)

VIEWS = ("list", "detail", "log", "run", "runs")
MAX_PAGE_SCHEDULES = 200


class NoSuchSocketConsumer(AsyncWebsocketConsumer):
    """A websocket path the app does not serve: the handshake is refused (HTTP 403)."""

    async def connect(self) -> None:
        await self.close()


class RunEventsConsumer(RecheckedSocket):
    """Push-only: run events as HTML fragments that htmx swaps by id.

    `?view=list|detail|log|run` picks the fragments; `?schedule=<id>` narrows the
    stream to one schedule; the list view gets only the schedules of its page
    (`?schedules=<id>,<id>,...`); the run view (`?run=<id>&offset=<n>`) gets the
    run's output after the `n` characters its page shows, and its state.
    Anonymous users and users without the view permission are refused (close
    code 4403). Fragments are rendered once for
    many clients (fragments.py).
    """

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await _can_view(user):
            await self.close(code=4403)
            return
        # Whatever the query holds (bad UTF-8, huge or Unicode-digit ids) is parsed
        # without raising: unknown values fall back, bad ids are ignored.
        raw = self.scope.get("query_string", b"")[:8192]
        query = parse_qs(raw.decode("utf-8", "replace"))
        self.view = (query.get("view") or ["log"])[0]
        if self.view not in VIEWS:
            self.view = "log"
        schedule = parse_id((query.get("schedule") or [""])[0])
        page = parse_ids((query.get("schedules") or [""])[0].split(","), MAX_PAGE_SCHEDULES)
        self.page = frozenset(page[:MAX_PAGE_SCHEDULES])  # a list page's schedules
        self.run_id = parse_id((query.get("run") or [""])[0])
        self.output_at = parse_id((query.get("offset") or [""])[0]) or 0
        if self.view == "run":
            if self.run_id is None:
                await self.close(code=4400)
                return
            self.groups = [run_group(self.run_id)]
            if schedule is not None:
                self.groups.append(schedule_group(schedule))
        elif schedule is not None:
            self.groups = [schedule_group(schedule)]
        elif self.view == "runs":
            # The runs page: new runs matching its filter, and updates of its rows.
            self.filters = RunFilters.from_params(query_params(query), now=datetime.now(UTC))
            self.after = parse_id((query.get("after") or [""])[0]) or 0
            self.shown = set(parse_ids((query.get("rows") or [""])[0].split(","), 200))
            self.groups = [ALL_RUNS_GROUP]
        elif self.view == "list":
            # Every run event and schedule change, kept for the page's rows: one message
            # a batch, where a group per row sent one per row (docs/dashboard.md).
            self.groups = [ALL_RUNS_GROUP, SCHEDULES_GROUP]
        else:
            self.groups = [ALL_RUNS_GROUP]
        # Rows show buttons by permission: users who may do the same share renders.
        self.abilities = tuple(sorted((await _abilities(user)).items()))
        self._rows: dict[int, asyncio.Future] = {}  # list rows asked for, not yet sent
        self._sending: set[asyncio.Task] = set()
        for group in self.groups:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        self.start_rechecks()
        if self.view == "run":
            # The run may have moved on between the page's render and this connect
            # (a quick run ends first; a dropped socket reconnects): catch up.
            shown = (query.get("status") or [""])[0]
            current = await fragments.run_status(self.run_id)
            if current and current != shown:
                html = await fragments.run_page_now(
                    self.run_id, current, self.scope["user"], self.abilities
                )
                if html:
                    await self.send(text_data=html)
            return
        since = (query.get("since") or [""])[0]
        after_text = (query.get("after") or ["0"])[0]
        after = 0 if after_text == "0" else parse_id(after_text)
        if self.view == "log" and since and after is not None:
            try:
                moment = datetime.fromisoformat(since[:64]).astimezone(UTC)
            except (ValueError, OverflowError):  # not a time, or beyond year 1..9999 in UTC
                return
            missed = await fragments.log_rows_since(since=moment, after=after, schedule_id=schedule)
            for html in missed:
                await self.send(text_data=html)

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)  # the re-check stops
        for task in getattr(self, "_sending", ()):
            task.cancel()
        for group in getattr(self, "groups", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Actions go through HTTP (with CSRF and permissions); input here is ignored."""

    async def run_event(self, message: dict) -> None:
        """A batch of run events (schedules/events.py): a frame back, whatever its size.

        htmx swaps each top-level element of a frame by itself, in order, so the
        fragments of a batch are sent joined."""
        if self.view == "list":
            for event in unmarshal_run_events(message, schedule_ids=self.page):
                self._send_row_when_rendered(event)
            return
        events = unmarshal_run_events(message)
        if not events:
            return
        if self.view == "run":
            mine = [event for event in events if event.id == self.run_id]
            if mine:  # the page shows the run as it is now: the latest event says enough
                await self._send_fragment(fragments.run_page_state, mine[-1])
            return
        if self.view == "detail":  # the run-now control, after the latest event
            await self._send_fragment(fragments.run_now_state, events[-1])
            return
        if self.view == "runs":
            frames = await self._runs_page_frames(events)
        else:
            frames = [await _joined(fragments.log_row(event) for event in events)]
        for html in frames:
            if html:
                await self.send(text_data=html)

    async def _runs_page_frames(self, events: list[RunEvent]) -> list[str]:
        """A row shown on the page is updated; a new matching run goes on top, once.

        New rows (each in a <tbody> that htmx prepends) and updated rows (bare <tr>s
        swapped by id) go in frames of their own: the first element of a frame decides
        how the HTML parser reads the rest, so a <tr> after a <tbody>, or the reverse,
        would lose its swap."""
        new, updated = [], []
        for event in events:
            if event.id in self.shown:
                updated.append(fragments.run_row(event, prepend=False))
            elif event.id > self.after and self.filters.matches(event):
                self.shown.add(event.id)
                new.append(fragments.run_row(event, prepend=True))
        return [await _joined(new), await _joined(updated)]

    async def _send_fragment(self, render, event: RunEvent) -> None:
        try:
            html = await render(event, self.scope["user"], self.abilities)
        except Exception:
            logger.exception("live fragment for run %s not rendered", event.id)
            return
        if html:
            await self.send(text_data=html)

    async def schedule_event(self, message: dict) -> None:
        """Another operator (or this one) changed a schedule this page shows."""
        event = ScheduleEvent.unmarshal(message)
        if self.view not in ("list", "detail"):
            return
        if self.view == "list" and event.action != "create" and event.schedule_id not in self.page:
            return  # another page's row
        user = self.scope["user"]
        try:
            html = await fragments.schedule_change(
                event, view=self.view, username=user.get_username()
            )
        except Exception:
            logger.exception("live change of schedule %s not rendered", event.code)
            return
        await self.send(text_data=html)
        if self.view == "list" and event.action not in ("create", "delete"):
            # The row as it is now (its buttons follow the new status).
            key = (event.schedule_id, ("schedule", event.action, event.at))
            future = fragments.list_rows().row(event.schedule_id, key[1], user, self.abilities)
            self._rows[event.schedule_id] = future
            task = asyncio.ensure_future(self._send_row(event.schedule_id, future))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def run_output(self, message: dict) -> None:
        """A chunk of the run's output, appended after what the page already shows."""
        event = RunOutputEvent.unmarshal(message)
        if self.view != "run" or event.run_id != self.run_id:
            return
        html = fragments.output_chunk(event, self.output_at)
        self.output_at = max(self.output_at, event.offset + len(event.text))
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


async def _joined(renders: Iterable[Awaitable[str]]) -> str:
    """The fragments of a batch in one frame (a failed one is logged and left out)."""
    parts = []
    for render in renders:
        try:
            parts.append(await render)
        except Exception:
            logger.exception("live fragment of a run not rendered")
    return "".join(parts)


@database_sync_to_async
def _can_view(user) -> bool:
    return user.has_perm(VIEW)


@database_sync_to_async
def _abilities(user) -> dict[str, bool]:
    return abilities(user)


def query_params(query: dict[str, list[str]]) -> dict[str, object]:
    """parse_qs's lists as RunFilters reads them: status a list, the rest single values."""
    return {key: values if key == "status" else values[0] for key, values in query.items()}
