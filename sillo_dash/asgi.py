"""ASGI entry point: HTTP through Django, the app's websocket and wake channel through Channels.

The same three lines a host's asgi.py gets (README, "Add to an existing project").
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sillo_dash.settings")

# Django must be set up before anything imports models (routing, consumers).
django_asgi_app = get_asgi_application()

from schedules.routing import asgi_application  # noqa: E402

application = asgi_application(django_asgi_app)
