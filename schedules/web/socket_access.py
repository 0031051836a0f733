"""Who may keep a websocket open: the re-check every live socket runs.

A socket outlives the page that opened it: it is closed (4403) once its user
logs out, is deactivated, changes password or loses the view permission,
checked every SILLO_WS_RECHECK_INTERVAL seconds.
"""

from __future__ import annotations

import asyncio
import logging
from importlib import import_module

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.utils.crypto import constant_time_compare

from ..conf import setting
from .access import VIEW

logger = logging.getLogger(__name__)


class RecheckedSocket(AsyncWebsocketConsumer):
    """A consumer whose accepted socket is closed once its user may no longer view."""

    _recheck: asyncio.Future | None = None

    def start_rechecks(self) -> None:
        """Call once the socket is accepted."""
        self._recheck = asyncio.ensure_future(self._recheck_forever())

    async def disconnect(self, code: int) -> None:
        if self._recheck is not None:
            self._recheck.cancel()
        await super().disconnect(code)

    async def _recheck_forever(self) -> None:
        interval = setting("SILLO_WS_RECHECK_INTERVAL")
        while True:
            await asyncio.sleep(interval)
            try:
                allowed = await still_allowed(self.scope)
            except Exception:  # a database hiccup: try again next time, keep the socket
                logger.warning("websocket access re-check failed", exc_info=True)
                continue
            if not allowed:
                await self.close(code=4403)
                return


@database_sync_to_async
def still_allowed(scope: dict) -> bool:
    """Whether the socket's user is still logged in (same session, same password)
    and still has the view permission, read fresh from the database."""
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return False
    current = get_user_model()._default_manager.filter(pk=user.pk, is_active=True).first()
    if current is None or not current.has_perm(VIEW):
        return False
    session = scope.get("session")
    if session is None:
        return True  # a scope without sessions (tests, custom stacks): the user check only
    key = session.session_key
    if not key:
        return False
    data = import_module(settings.SESSION_ENGINE).SessionStore(key).load()
    if str(data.get(SESSION_KEY)) != str(user.pk):
        return False  # logged out (the session was flushed) or another user now
    # A changed password ends other sessions, as Django's own middleware does.
    return constant_time_compare(data.get(HASH_SESSION_KEY, ""), current.get_session_auth_hash())
