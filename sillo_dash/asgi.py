"""ASGI entry point: HTTP through Django, websockets through Channels."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sillo_dash.settings")

# Django must be set up before anything imports models (routing, consumers).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from schedules.routing import websocket_urlpatterns  # noqa: E402
from schedules.scheduler.hints import SchedulerWakeConsumer  # noqa: E402
from schedules.wake import SCHEDULER_CHANNEL  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
        # runscheduler's background worker: wake and run-now hints.
        "channel": ChannelNameRouter({SCHEDULER_CHANNEL: SchedulerWakeConsumer.as_asgi()}),
    }
)
