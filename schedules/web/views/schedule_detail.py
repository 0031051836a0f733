"""The schedule page: spec, next fire times in two zones, run history, chart, errors."""

from __future__ import annotations

from datetime import timedelta

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
from ...run_filters import page_after
from ...run_history import SAMPLE_PER_DAY, STRETCH, run_history
from ...validation import json_text
from .. import access
from ..charts import HEIGHT, WIDTH, duration_bars, history_charts
from ..rows import build_rows

RUNS_PER_PAGE = 25
HISTORY_DAYS = 30


@require_GET
def schedule_detail(request: HttpRequest, pk: int) -> HttpResponse:
    schedule = access.schedule_for(request, pk)
    # Cursor pages, like the runs page's: a count of every kept run and an OFFSET into
    # them cost 17 and 30 ms on PostgreSQL at 100,000 runs, growing with them.
    cursor = request.GET.get("cursor") or None
    runs, next_cursor = page_after(Run.objects.for_schedule(schedule), cursor, RUNS_PER_PAGE)
    pager = {"runs": runs, "next_cursor": next_cursor, "first_page": cursor is None}
    if request.htmx and "cursor" in request.GET:
        return TemplateResponse(
            request, "schedules/detail.html#history", {**pager, "schedule": schedule}
        )
    next_times = schedule.preview_times(
        10, after=timezone.now(), operator_zone=timezone.get_current_timezone()
    )
    bars, longest = duration_bars(runs)
    now = timezone.now()
    zone = timezone.get_current_timezone()
    today = now.astimezone(zone).date()
    days = [today - timedelta(days=back) for back in range(HISTORY_DAYS - 1, -1, -1)]
    history = history_charts(run_history(schedule, days=days, zone=zone))
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
        **pager,
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
        "sample_per_day": SAMPLE_PER_DAY,
        "stretch": STRETCH,
        "kept": setting("SILLO_RUNS_PER_SCHEDULE"),
        "chart_width": WIDTH,
        "chart_height": HEIGHT,
        "effective": alert_rules.explained(schedule),
        "incidents": alert_selectors.incidents_of(schedule),
        **access.abilities(request.user),
    }
    return TemplateResponse(request, "schedules/detail.html", context)
