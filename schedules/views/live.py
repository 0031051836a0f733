"""The live log: the last 100 run events from the database, then the websocket."""

from __future__ import annotations

from django.db.models.functions import Coalesce
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
    recent = runs.annotate(at=Coalesce("finished_at", "started_at", "queued_at")).order_by(
        "-at", "-pk"
    )[:RECENT]
    context = {
        "since": timezone.now().isoformat(),
        "runs": list(recent),
        "schedules": Schedule.objects.order_by("code").values_list("pk", "code"),
        "selected": int(selected) if selected.isdigit() else None,
    }
    return TemplateResponse(request, "schedules/live.html", context)
