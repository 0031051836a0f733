"""Template tags of the app's pages: banners, messages and the live socket's URL.

They need nothing from the host's context processors but the request (or
do without it), so the pages work in any project's template settings.
"""

from __future__ import annotations

from channels.layers import get_channel_layer
from django import template
from django.contrib.messages import get_messages
from django.urls import reverse

from ..models import Incident
from ..validation import json_text
from ..web.access import VIEW
from ..web.context_processors import banners

register = template.Library()

LIVE_OFF = (
    "warning",
    "Live updates are off: no channel layer is configured (CHANNEL_LAYERS). "
    "Pages show what was true when they loaded; reload to see more.",
)


def live_updates_on() -> bool:
    return get_channel_layer() is not None


@register.inclusion_tag("schedules/_banners.html", takes_context=True)
def sillo_banners(context: template.Context) -> dict:
    """No scheduler alive, duplicates, orphans, failed imports, live updates off."""
    request = context.get("request")
    if request is None:
        return {"banners": []}
    found = list(banners(request).get("banners", []))
    if not live_updates_on() and request.user.is_authenticated:
        found.append(LIVE_OFF)
    return {"banners": found}


@register.inclusion_tag("schedules/_messages.html", takes_context=True)
def sillo_messages(context: template.Context) -> dict:
    """The request's messages, read here so no context processor is needed."""
    request = context.get("request")
    return {"messages": get_messages(request) if request is not None else []}


@register.simple_tag
def sillo_socket() -> str:
    """The live pages' websocket URL under the host's mount, or "" without a channel layer.

    A path: htmx's websocket extension makes it ws:// or wss:// for the page's host.
    """
    return reverse("schedules:run-events") if live_updates_on() else ""


@register.simple_tag(takes_context=True)
def sillo_incident_count(context: template.Context) -> int | None:
    """Open incidents for the header, or None for a user who may not view them."""
    request = context.get("request")
    if request is None or not request.user.has_perm(VIEW):
        return None
    return Incident.objects.open().count()


@register.simple_tag
def sillo_incident_socket() -> str:
    """The header count's websocket URL under the host's mount, or "" without a layer."""
    return reverse("schedules:incident-events") if live_updates_on() else ""


@register.filter
def as_json(value: object) -> str:
    """A stored value as compact JSON text (audit before/after), whatever it holds."""
    return json_text(value, indent=None)


@register.filter
def svg(value: float, places: int = 1) -> str:
    """A chart coordinate as SVG reads it: a dot for the decimal point in every
    locale, and a few times cheaper than `floatformat` (a 30-day chart has 400)."""
    return f"{float(value):.{int(places)}f}"
