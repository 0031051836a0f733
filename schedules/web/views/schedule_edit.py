"""Create and edit schedules, with the trigger builder and a live preview."""

from __future__ import annotations

from dataclasses import asdict

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from ... import chains, services
from ...conf import setting
from ...registry import registry
from ...timing import InvalidTrigger, get_zone, own_zone, preview_times
from ...validation import InvalidKwargs
from .. import access
from ..forms import ZONES, ScheduleForm
from ..trigger_form import (
    KINDS,
    UNITS,
    apply_op,
    flatten,
    node_from_data,
    node_from_spec,
    spec_from_node,
)


def _page(request, form, node, schedule=None, status=200) -> HttpResponse:
    context = {"form": form, "node": node, "schedule": schedule, "kinds": KINDS,
               "units": list(UNITS), "zones": ZONES}  # fmt: skip
    return TemplateResponse(request, "schedules/edit.html", context, status=status)


@require_http_methods(["GET", "POST"])
def schedule_create(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    access.require(request, access.ADD)
    if request.method == "GET":
        initial = {}
        task = registry.get(request.GET.get("task", ""))
        spec = None
        if task is not None:
            # The task's declared options are this schedule's defaults, shown and editable.
            initial = {"task_name": task.name, "code": task.name, **asdict(task.options)}
            if task.default_trigger is not None:
                spec = task.default_trigger.to_spec()
        return _page(request, ScheduleForm(initial=initial), node_from_spec(spec))
    form = ScheduleForm(request.POST)
    node = node_from_data(request.POST)
    spec = spec_from_node(node)
    if form.is_valid() and spec is not None:
        data = {k: v for k, v in form.cleaned_data.items() if k != "opened_version"}
        try:
            schedule = services.schedule_create(trigger=spec, by=request.user, **data)
        except InvalidTrigger as exc:
            node.error = str(exc)
        except InvalidKwargs as exc:
            form.add_error("kwargs", str(exc).removeprefix("kwargs: "))
        except chains.InvalidChain as exc:  # another save made the cycle meanwhile
            for name, problem in exc.problems.items():
                form.add_error(name, problem)
        else:
            return redirect("schedules:schedule-detail", pk=schedule.pk)
    return _page(request, form, node, status=422)


@require_http_methods(["GET", "POST"])
def schedule_edit(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule_for(request, pk, access.CHANGE)
    if request.method == "GET":
        return _page(
            request, ScheduleForm(instance=schedule), node_from_spec(schedule.trigger), schedule
        )
    form = ScheduleForm(request.POST, instance=schedule)
    node = node_from_data(request.POST)
    spec = spec_from_node(node)
    status = 422
    if form.is_valid() and spec is not None:
        fields = {k: v for k, v in form.cleaned_data.items() if k not in ("code", "opened_version")}
        try:
            services.schedule_update(
                schedule=schedule,
                trigger=spec,
                expected_version=form.cleaned_data.get("opened_version"),
                by=request.user,
                **fields,
            )
        except InvalidTrigger as exc:
            node.error = str(exc)
        except services.EditConflict as exc:
            differences = "; ".join(
                f"{name}: now {theirs!r}, yours {yours!r}"
                for name, (theirs, yours) in exc.differences.items()
            )
            form.add_error(None, f"{exc} {differences}".strip())
            status = 409
        except InvalidKwargs as exc:
            form.add_error("kwargs", str(exc).removeprefix("kwargs: "))
        except chains.InvalidChain as exc:  # another save made the cycle meanwhile
            for name, problem in exc.problems.items():
                form.add_error(name, problem)
        else:
            return redirect("schedules:schedule-detail", pk=schedule.pk)
    return _page(request, form, node, schedule, status=status)


@require_POST
def trigger_editor(request: HttpRequest) -> HttpResponse:
    """Re-render the builder after adding, removing or re-kinding a node, and its preview."""
    access.require(request, access.VIEW)
    if too_many := _too_many_fields(request):
        return too_many
    node = apply_op(node_from_data(request.POST), request.POST.get("op", ""))
    context = {"kinds": KINDS, "units": list(UNITS), "zones": ZONES, "oob": True}
    context.update(_preview_context(request, node))
    return TemplateResponse(request, "schedules/_editor_response.html", context)


@require_POST
def trigger_preview(request: HttpRequest) -> HttpResponse:
    """Human text and the next fire times as the operator types; errors per node."""
    access.require(request, access.VIEW)
    if too_many := _too_many_fields(request):
        return too_many
    context = _preview_context(request, node_from_data(request.POST))
    return TemplateResponse(request, "schedules/_preview.html", context)


def _too_many_fields(request: HttpRequest) -> HttpResponse | None:
    """A builder request is bounded before it is read (SILLO_BUILDER_MAX_FIELDS)."""
    limit = setting("SILLO_BUILDER_MAX_FIELDS")
    if len(request.POST) > limit:
        return HttpResponseBadRequest(f"the trigger has more than {limit} fields")
    return None


def _preview_context(request: HttpRequest, node) -> dict:
    spec = spec_from_node(node)
    context = {"node": node, "nodes": flatten(node), "times": [], "text": ""}
    if spec is None:
        return context
    trigger = node.trigger
    try:
        chosen = get_zone(request.POST.get("tz") or "UTC")
    except InvalidTrigger:
        chosen = get_zone("UTC")
    zone = own_zone(trigger, chosen)
    try:
        times = preview_times(
            trigger,
            count=10,
            after=timezone.now(),
            zone=zone,
            operator_zone=timezone.get_current_timezone(),
        )
    except InvalidTrigger as exc:  # the search budget ran out past the first slots
        node.error = str(exc).removeprefix("trigger: ")
        return context
    context["text"] = trigger.describe()
    context["times"] = times
    context["zone"] = zone.key
    return context
