"""The schedule page: spec, next fire times in two zones, run history, chart, errors."""

from __future__ import annotations

from datetime import timedelta

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from ... import chain_reads
from ...alerts import rules as alert_rules
from ...alerts import selectors as alert_selectors
from ...conf import setting
from ...defaults import differences
from ...models import Run
from ...selectors import run_history
from ...validation import json_text
from .. import access
from ..charts import HEIGHT, WIDTH, duration_bars, history_charts
from ..rows import build_rows

RUNS_PER_PAGE = 25
HISTORY_DAYS = 30


@require_GET
def schedule_detail(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule_for(request, pk)
    runs = Paginator(Run.objects.for_schedule(schedule), RUNS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    if request.htmx and request.GET.get("page"):
        return TemplateResponse(
            request, "schedules/detail.html#history", {"runs": runs, "schedule": schedule}
        )
    next_times = schedule.preview_times(
        10, after=timezone.now(), operator_zone=timezone.get_current_timezone()
    )
    bars, longest = duration_bars(list(runs.object_list))
    now = timezone.now()
    zone = timezone.get_current_timezone()
    today = now.astimezone(zone).date()
    days = [today - timedelta(days=back) for back in range(HISTORY_DAYS - 1, -1, -1)]
    runs_since = run_history(schedule, days=days, zone=zone)
    history = history_charts(
        runs_since.rows,
        now=now,
        zone=zone,
        days=HISTORY_DAYS,
        counts=runs_since.counts,
        every=runs_since.every,
    )
    timeout = schedule.effective_timeout
    if schedule.timeout is None:
        timeout_text = f"the default, {timeout:g} s" if timeout else "none (the default)"
    else:
        timeout_text = f"{timeout:g} s" if timeout else "none"
    (row,) = build_rows([schedule], request.user)
    context = {
        "schedule": schedule,
        # Whatever is stored (lone surrogates, huge integers) prints: json_text never raises.
        "spec_json": json_text(schedule.trigger),
        "kwargs_json": json_text(schedule.kwargs),
        "row": row,
        "runs": runs,
        "next_times": next_times,
        "operator_zone": timezone.get_current_timezone_name(),
        "bars": bars,
        "timeout_text": timeout_text,
        "queued_count": Run.objects.queued().filter(schedule=schedule).count(),
        "changes": list(schedule.audit_events.order_by("-at", "-pk")[:10]),
        # An operator-edited code default: how it differs from what the code declares.
        "code_differences": differences(schedule) if schedule.source == "operator" else {},
        "longest": longest,
        # Follow-ups: the schedules this one runs after, and the tree it starts.
        "links": chain_reads.schedule_links(schedule),
        "history": history,
        "charts": [history["rate"], history["duration"], history["lateness"]],
        "kept": setting("SILLO_RUNS_PER_SCHEDULE"),
        "chart_width": WIDTH,
        "chart_height": HEIGHT,
        "effective": alert_rules.explained(schedule),
        "incidents": alert_selectors.incidents_of(schedule),
        **access.abilities(request.user),
    }
    return TemplateResponse(request, "schedules/detail.html", context)
