"""Actions on one run: cancel (stop) it."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from ... import services
from ...models import Schedule
from .. import access
from ..rows import build_rows


@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Stop a queued or running run (operate permission); refusals are explained."""
    run = access.run_for(request, pk, access.OPERATE)
    error = ""
    try:
        run = services.run_cancel(run=run, by=request.user)
    except services.CancelRefused as exc:
        error = str(exc)
    if request.htmx and run.schedule_id is not None:
        # The run-now control of the schedule, as the run-now button swaps it.
        schedule = Schedule.objects.filter(pk=run.schedule_id).first()
        if schedule is not None:
            (row,) = build_rows([schedule], request.user)
            context = {"row": row, "run_error": error, "event": run}
            return TemplateResponse(request, "schedules/_run_now.html", context)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, f"Run #{run.pk} cancelled.")
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        back = reverse("schedules:run-detail", args=[run.pk])  # the run it was about
    return redirect(back)
