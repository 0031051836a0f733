"""The incidents page: open and closed incidents with their timelines, and the delivery log."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from ...alerts import selectors
from ...models import Incident
from .. import access

CLOSED_PER_PAGE = 25


@require_GET
def incident_list(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    closed = Paginator(selectors.closed_incidents(), CLOSED_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "open": list(selectors.open_incidents().prefetch_related("events")),
        "closed": closed,
        "deliveries": selectors.delivery_summary(),
        "log": selectors.delivery_log(),
    }
    return TemplateResponse(request, "schedules/incidents.html", context)


@require_GET
def incident_detail(request: HttpRequest, pk: int) -> HttpResponse:
    access.require(request, access.VIEW)
    incident = get_object_or_404(Incident, pk=pk)
    context = {
        "incident": incident,
        "events": list(incident.events.all()),
        "notifications": list(incident.notifications.select_related("group").order_by("pk")),
    }
    return TemplateResponse(request, "schedules/incident.html", context)
