"""ASGI entry point: HTTP through Django, the app's websocket and wake channel through Channels.

The same three lines a host's asgi.py gets (README, "Add to an existing project").
"""

from __future__ import annotations

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sillo_dash.settings")

# Django must be set up before anything imports models (routing, consumers).
django_asgi_app = get_asgi_application()

from schedules.routing import asgi_application  # noqa: E402

application = asgi_application(django_asgi_app)

# What is imported by now lives as long as the web process: out of the collector's
# sight, a full collection no longer walks it (one in a request added 40 to 50 ms to a
# 60 ms page at 100,000 schedules). The scheduler and its workers do the same.
gc.freeze()
