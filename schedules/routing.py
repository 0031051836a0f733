"""Websocket routes."""

from __future__ import annotations

from django.urls import path

from .web.consumers import RunEventsConsumer

websocket_urlpatterns = [path("ws/runs/", RunEventsConsumer.as_asgi())]
