"""The audit page: who did what to which schedule, from where, filtered, newest first."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from ...run_filters import page_after
from ...selectors import AUDIT_ACTIONS, AUDIT_CHANNELS, AUDIT_WINDOWS, audit_events
from .. import access

PAGE_SIZE = 50
FILTERS = ("schedule", "action", "actor", "via", "window")


@require_GET
def audit_list(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    events = audit_events(request.GET, now=timezone.now())
    cursor = request.GET.get("cursor") or None
    rows, next_cursor = page_after(events, cursor, PAGE_SIZE, field="at")
    params = {name: request.GET[name] for name in FILTERS if request.GET.get(name)}
    context = {
        "events": rows,
        "params": params,
        "query": urlencode(params),
        "next_cursor": next_cursor,
        "first_page": cursor is None,
        "actions": AUDIT_ACTIONS,
        "channels": AUDIT_CHANNELS,
        "windows": list(AUDIT_WINDOWS),
    }
    return TemplateResponse(request, "schedules/audit.html", context)
