"""The live log: the last 100 run events from the database, then the websocket."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from .. import access
from ..models import Run, Schedule

RECENT = 100


@require_GET
def live_log(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    runs = Run.objects.all()
    selected = request.GET.get("schedule", "")
    if selected.isdigit():
        runs = runs.filter(schedule_id=int(selected))
    # The newest runs by id (the primary key index), shown by their latest event.
    recent = list(runs.order_by("-pk")[:RECENT])
    for run in recent:
        run.at = run.finished_at or run.started_at or run.queued_at
    recent.sort(key=lambda run: run.at, reverse=True)
    context = {
        "since": timezone.now().isoformat(),
        # Runs after this one, or finished after `since`, are sent when the socket connects.
        "after": Run.objects.order_by("-pk").values_list("pk", flat=True).first() or 0,
        "runs": recent,
        "schedules": Schedule.objects.order_by("code").values_list("pk", "code"),
        "selected": int(selected) if selected.isdigit() else None,
    }
    return TemplateResponse(request, "schedules/live.html", context)
