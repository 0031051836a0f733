"""The product's ASGI application plus one bare websocket route, for bench/live_log.py.

`/bench/bare/` joins the same run-events group behind the same origin check
and authentication, and forwards each event as JSON without rendering: the
floor that Channels, Redis and daphne set for any live view.
"""

from __future__ import annotations

import json

from sillo_dash.asgi import application as product

http = product.application_mapping["http"]  # Django is set up from here on

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.generic.websocket import AsyncWebsocketConsumer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path  # noqa: E402

from schedules.events import ALL_RUNS_GROUP  # noqa: E402
from schedules.routing import websocket_urlpatterns  # noqa: E402


class BareConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4403)
            return
        await self.channel_layer.group_add(ALL_RUNS_GROUP, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(ALL_RUNS_GROUP, self.channel_name)

    async def run_event(self, message: dict) -> None:
        await self.send(text_data=json.dumps(message["runs"]))


application = ProtocolTypeRouter(
    {
        "http": http,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(
                URLRouter([path("bench/bare/", BareConsumer.as_asgi()), *websocket_urlpatterns])
            )
        ),
    }
)
