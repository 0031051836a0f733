"""Row actions (pause, resume, cancel, reset, delete, run now) and bulk actions."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect

from ... import services
from ...models import Schedule, SchedulerInstance
from ...params import parse_ids
from .. import access
from ..rows import build_rows

ACTIONS = {
    "pause": (access.OPERATE, services.schedule_pause),
    "resume": (access.OPERATE, services.schedule_resume),
    "reactivate": (access.OPERATE, services.schedule_reactivate),
    "cancel": (access.OPERATE, services.schedule_cancel),
    "reset": (access.CHANGE, services.schedule_reset_to_default),
}


def render_row(request: HttpRequest, schedule: Schedule, error: str = "") -> HttpResponse:
    (row,) = build_rows([schedule], request.user)
    context = {"row": row, "row_error": error, **access.abilities(request.user)}
    return TemplateResponse(request, "schedules/list.html#row", context)


@require_POST
def schedule_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    if action not in ACTIONS:
        return HttpResponse(status=404)
    perm, operation = ACTIONS[action]
    schedule = access.schedule_for(request, pk, perm)
    try:
        schedule = operation(schedule=schedule, by=request.user)
    except (services.InvalidTransition, services.RunRefused) as exc:
        if not request.htmx:
            messages.error(request, str(exc))
            return redirect("schedules:schedule-detail", pk=pk)
        return render_row(request, schedule, str(exc))
    if not request.htmx:
        return redirect("schedules:schedule-detail", pk=schedule.pk)
    if action == "reset":  # a fresh record: the old row and its id are gone
        return HttpResponseClientRedirect(
            request.headers.get("HX-Current-URL") or reverse("schedules:home")
        )
    return render_row(request, schedule)


@require_POST
def schedule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule_for(request, pk, access.DELETE)
    services.schedule_delete(schedule=schedule, by=request.user)
    if request.htmx:
        return HttpResponse("")  # the row disappears
    messages.success(request, f"Deleted {schedule.code}.")
    return redirect("schedules:home")


@require_POST
def schedule_run_now(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule_for(request, pk, access.OPERATE)
    error = ""
    try:
        # "Run this one only" (the schedule page's chain): its follow-ups are not queued.
        only = request.POST.get("only") == "1"
        services.schedule_run_now(schedule=schedule, by=request.user, follow_ups=not only)
    except services.RunRefused as exc:
        error = str(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect("schedules:schedule-detail", pk=pk)
    (row,) = build_rows([schedule], request.user)
    no_scheduler = not SchedulerInstance.objects.alive().exists()
    context = {"row": row, "run_error": error, "no_scheduler": no_scheduler}
    return TemplateResponse(request, "schedules/_run_now.html", context)


@require_POST
def schedule_drop_queued(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule_for(request, pk, access.OPERATE)
    dropped = services.schedule_drop_queued(schedule=schedule, by=request.user)
    messages.info(request, f"{schedule.code}: {dropped} queued run(s) dropped.")
    return redirect("schedules:schedule-detail", pk=pk)


@require_POST
def bulk_action(request: HttpRequest) -> HttpResponse:
    action = request.POST.get("action", "")
    if action not in ("pause", "resume", "cancel", "run"):
        return HttpResponse("unknown bulk action", status=400)
    access.require(request, access.VIEW)
    access.require(request, access.OPERATE)
    ids = parse_ids(request.POST.getlist("selected"))
    done, refused = 0, []
    for schedule in Schedule.objects.filter(pk__in=ids):
        try:
            if action == "run":
                services.schedule_run_now(schedule=schedule, by=request.user)
            else:
                ACTIONS[action][1](schedule=schedule, by=request.user)
            done += 1
        except (services.InvalidTransition, services.RunRefused) as exc:
            refused.append(str(exc))
    summary = f"{action}: {done} done" + (f", {len(refused)} refused" if refused else "")
    for reason in refused:
        messages.warning(request, reason)
    messages.info(request, summary)
    if not request.htmx:
        return redirect("schedules:home")
    return HttpResponseClientRedirect(
        request.headers.get("HX-Current-URL") or reverse("schedules:home")
    )
