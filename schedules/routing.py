"""The app's ASGI routes: the live pages' websocket and the scheduler's wake channel.

Import this module after Django is set up (after `get_asgi_application()`),
as Channels' own routing modules are. A host's asgi.py needs three lines:

    django_asgi_app = get_asgi_application()
    from schedules.routing import asgi_application  # noqa: E402
    application = asgi_application(django_asgi_app)

`websocket_urlpatterns` serves the socket at `/ws/runs/` (the app mounted at
the site root); `mounted_websocket_urlpatterns()` serves it wherever the
host's `include("schedules.urls")` put the `schedules:run-events` URL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import NoReverseMatch, URLPattern, path, re_path, reverse

from .scheduler.hints import SchedulerWakeConsumer
from .wake import SCHEDULER_CHANNEL
from .web.consumers import NoSuchSocketConsumer, RunEventsConsumer
from .web.incident_consumer import IncidentCountConsumer

SOCKET_PATH = "ws/runs/"

INCIDENTS_PATH = "ws/incidents/"

websocket_urlpatterns = [
    path(SOCKET_PATH, RunEventsConsumer.as_asgi()),
    path(INCIDENTS_PATH, IncidentCountConsumer.as_asgi()),
]

# runscheduler listens on this channel itself; a `runworker scheduler` uses this router.
channel_routes = {SCHEDULER_CHANNEL: SchedulerWakeConsumer.as_asgi()}


def socket_path() -> str:
    """The websocket's path under the host's mount, without the leading slash."""
    try:
        return reverse("schedules:run-events").lstrip("/")
    except NoReverseMatch:  # the host has not included schedules.urls: the root default
        return SOCKET_PATH


def mounted_websocket_urlpatterns() -> list[URLPattern]:
    """The websocket routes at the path the host's URLconf gives the app."""
    mount = socket_path().removesuffix(SOCKET_PATH)
    return [
        path(mount + SOCKET_PATH, RunEventsConsumer.as_asgi()),
        path(mount + INCIDENTS_PATH, IncidentCountConsumer.as_asgi()),
    ]


def asgi_application(http: Any, *, websocket: Sequence[URLPattern] = ()) -> ProtocolTypeRouter:
    """HTTP to `http` (the host's Django app), the app's websocket under its mount
    (behind the session login and an origin check), the host's own websocket
    routes (`websocket`) after it, and the scheduler's wake channel."""
    # Last: a path no route serves is refused at the handshake, not raised as an
    # error (Channels' router raises, and the server logs a traceback per attempt).
    routes = [
        *mounted_websocket_urlpatterns(),
        *websocket,
        re_path(r"", NoSuchSocketConsumer.as_asgi()),
    ]
    return ProtocolTypeRouter(
        {
            "http": http,
            "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(routes))),
            "channel": ChannelNameRouter(channel_routes),
        }
    )
