"""The live log: the last 100 run events from the database, then the websocket."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from ... import selectors
from ...models import Schedule
from ...params import parse_id
from ...run_filters import clean_text
from .. import access

RECENT = 100
# Up to this many schedules the filter is a menu of them; beyond, a box for a code
# (a menu of 10,000 schedules was 440 KB of the page, and 100,000 would be 4 MB).
PICKER_MAX = 200


@require_GET
def live_log(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    schedule_id = parse_id(request.GET.get("schedule", ""))
    code = clean_text(request.GET.get("code"))
    unknown = ""
    if schedule_id is None and code:
        schedule_id = Schedule.objects.filter(code=code).values_list("pk", flat=True).first()
        unknown = "" if schedule_id else f"No schedule has the code “{code}”: showing every one."
    elif schedule_id is not None:  # the box shows the filter a link or the menu chose
        code = Schedule.objects.filter(pk=schedule_id).values_list("code", flat=True).first() or ""
    picker = list(Schedule.objects.order_by("code").values_list("pk", "code")[: PICKER_MAX + 1])
    context = {
        "since": timezone.now().isoformat(),
        # Runs after this one, or finished after `since`, are sent when the socket connects.
        "after": selectors.newest_run_id(),
        "runs": selectors.recent_runs(limit=RECENT, schedule_id=schedule_id),
        "schedules": picker if len(picker) <= PICKER_MAX else None,
        "selected": schedule_id,
        "code": code,
        "unknown": unknown,
    }
    return TemplateResponse(request, "schedules/live.html", context)
