"""Everyday runs: run a schedule now with other kwargs, or rerun a past run.

One form for both, prefilled (the schedule's kwargs, or the past run's),
checked against the task's signature by the service, and recorded on the run
and in the audit trail. Both need the operate permission; a refusal (an
orphan task, a deleted schedule, kwargs that do not fit) is shown in the form.
"""

from __future__ import annotations

import inspect

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_http_methods

from ... import services
from ...models import Run, Schedule
from ...registry import registry
from ...validation import InvalidKwargs, json_text, kwargs_from_text
from .. import access


@require_http_methods(["GET", "POST"])
def schedule_run_with(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule_for(request, pk, access.OPERATE)
    return _form(request, schedule=schedule, code=schedule.code, initial=schedule.kwargs)


@require_http_methods(["GET", "POST"])
def run_rerun(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run_for(request, pk, access.OPERATE)
    schedule = Schedule.objects.filter(pk=run.schedule_id).first() if run.schedule_id else None
    return _form(request, schedule=schedule, code=run.schedule_code, initial=run.kwargs, rerun=run)


def _form(
    request: HttpRequest,
    *,
    schedule: Schedule | None,
    code: str,
    initial: object,
    rerun: Run | None = None,
) -> HttpResponse:
    text, error = json_text(initial), ""
    refusal = (
        registry.refusal(schedule.task_name)
        if schedule is not None
        else f"its schedule '{code}' was deleted, so it cannot run again"
    )
    if request.method == "POST":
        text = request.POST.get("kwargs", "")
        try:
            kwargs = kwargs_from_text(text)
            if rerun is not None:
                run = services.run_rerun(run=rerun, by=request.user, kwargs=kwargs)
            elif schedule is not None:
                run = services.schedule_run_now(
                    schedule=schedule, by=request.user, kwargs=kwargs, merge=False
                )
        except (InvalidKwargs, services.RunRefused) as exc:
            error = str(exc).removeprefix("kwargs: ")
        else:
            messages.success(request, f"Run #{run.pk} of {run.schedule_code} queued.")
            return redirect("schedules:run-detail", run.pk)
    declaration = registry.get(schedule.task_name) if schedule is not None else None
    context = {
        "schedule": schedule,
        "code": code,
        "rerun": rerun,
        "kwargs_text": text,
        "error": error,
        "refusal": refusal,
        "signature": (
            f"{declaration.name}{signature_text(declaration.func)}" if declaration else ""
        ),
    }
    status = 422 if error else 409 if refusal else 200
    return TemplateResponse(request, "schedules/run_with.html", context, status=status)


def signature_text(func: object) -> str:
    """The signature, as inspect prints it."""
    try:
        return str(inspect.signature(func))
    except (TypeError, ValueError):
        return "(…)"
