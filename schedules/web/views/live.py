"""The live log: the last 100 run events from the database, then the websocket."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from ... import selectors
from ...models import Schedule
from .. import access
from ..params import parse_id

RECENT = 100


@require_GET
def live_log(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    schedule_id = parse_id(request.GET.get("schedule", ""))
    context = {
        "since": timezone.now().isoformat(),
        # Runs after this one, or finished after `since`, are sent when the socket connects.
        "after": selectors.newest_run_id(),
        "runs": selectors.recent_runs(limit=RECENT, schedule_id=schedule_id),
        "schedules": Schedule.objects.order_by("code").values_list("pk", "code"),
        "selected": schedule_id,
    }
    return TemplateResponse(request, "schedules/live.html", context)
