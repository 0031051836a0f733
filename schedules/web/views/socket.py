"""The websocket's URL over plain HTTP: it names the path, the socket serves it."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse


def run_events(request: HttpRequest) -> HttpResponse:
    """A browser that reaches this over HTTP was not upgraded: say what the URL is."""
    response = HttpResponse(
        "This is the websocket of the live pages; connect with ws:// or wss://.\n",
        status=426,
        content_type="text/plain",
    )
    response["Upgrade"] = "websocket"
    return response
