"""Websocket routes."""

from __future__ import annotations

from django.urls import path

from .web.consumers import RunEventsConsumer
from .web.incident_consumer import IncidentCountConsumer

websocket_urlpatterns = [
    path("ws/runs/", RunEventsConsumer.as_asgi()),
    path("ws/incidents/", IncidentCountConsumer.as_asgi()),
]
