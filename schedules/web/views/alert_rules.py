"""A schedule's alert rules: Viewers read them, Editors set them and send a test."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_http_methods, require_POST

from ...alerts import rules as alert_rules
from ...alerts import services
from .. import access
from ..alert_forms import AlertRulesForm


@require_http_methods(["GET", "POST"])
def schedule_alerts(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule_for(request, pk, access.CHANGE)
    if request.method == "POST":
        form = AlertRulesForm(request.POST)
        if form.is_valid():
            services.alert_rules_set(schedule=schedule, rules=form.rules)
            messages.success(request, f"Alert rules of {schedule.code} saved.")
            return redirect("schedules:schedule-detail", pk=schedule.pk)
        status = 422
    else:
        form = AlertRulesForm.from_rules(schedule.alert or {})
        status = 200
    context = {
        "schedule": schedule,
        "form": form,
        "effective": alert_rules.explained(schedule),
    }
    return TemplateResponse(request, "schedules/alerts_edit.html", context, status=status)


@require_POST
def schedule_alerts_test(request: HttpRequest, pk: int) -> HttpResponse:
    """Send a test notification about this schedule to every channel; show each answer."""
    schedule = access.schedule_for(request, pk, access.CHANGE)
    answers = services.send_test(targets=services.all_targets(), schedule=schedule)
    return TemplateResponse(
        request,
        "schedules/_test_answers.html",
        {"answers": answers, "none_configured": not answers},
    )
