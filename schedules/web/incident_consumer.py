"""The header's live incident count: a push-only websocket for every page."""

from __future__ import annotations

from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from ..alerts.live import INCIDENTS_GROUP
from ..models import Incident
from .access import VIEW
from .socket_access import RecheckedSocket


def count_fragment(count: int) -> str:
    return render_to_string("schedules/_incident_count.html", {"incident_count": count})


class IncidentCountConsumer(RecheckedSocket):
    """Sends the open-incident count on connect and whenever a scheduler reports a change.

    Anonymous users and users without the view permission are refused (4403), and
    closed once they log out or lose it (socket_access.py).
    """

    groups = [INCIDENTS_GROUP]

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await _can_view(user):
            await self.close(code=4403)
            return
        await self.accept()
        self.start_rechecks()
        await self.send(text_data=count_fragment(await _open_count()))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Push-only: input is ignored."""

    async def incidents_count(self, message: dict) -> None:
        await self.send(text_data=count_fragment(int(message["count"])))


@database_sync_to_async
def _can_view(user) -> bool:
    return user.has_perm(VIEW)


@database_sync_to_async
def _open_count() -> int:
    return Incident.objects.open().count()
