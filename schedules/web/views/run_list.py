"""The runs page: runs of every schedule, filtered, newest first, a cursor a page, live."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from ...choices import RunReason, RunStatus
from ...registry import registry
from ...run_filters import ERRORS, WINDOWS, RunFilters, page_after
from .. import access

PAGE_SIZE = 50


def filters_of(request: HttpRequest) -> RunFilters:
    return RunFilters.from_params(
        request.GET, now=timezone.now(), zone=timezone.get_current_timezone()
    )


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    filters = filters_of(request)
    cursor = request.GET.get("cursor") or None
    runs, next_cursor = page_after(filters.queryset(), cursor, PAGE_SIZE)
    query = urlencode(filters.query(), doseq=True)
    context = {
        "runs": runs,
        "filters": filters,
        "query": query,
        "next_cursor": next_cursor,
        "first_page": cursor is None,
        "statuses": [ERRORS, *RunStatus.values],
        "reasons": RunReason.values,
        "windows": list(WINDOWS),
        "task_names": sorted(registry.declarations),
        # The stream: new runs matching the filter go on top of the first page only.
        "live": filters.live and cursor is None,
        "newest": runs[0].pk if runs else 0,
        "shown": ",".join(str(run.pk) for run in runs),
    }
    template = "schedules/runs.html#table" if request.htmx else "schedules/runs.html"
    return TemplateResponse(request, template, context)
