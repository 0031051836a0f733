"""Websocket routes. The live-log consumers arrive with the dashboard."""

from __future__ import annotations

websocket_urlpatterns: list = []
