"""The runs page: runs of every schedule, filtered, newest first, a cursor a page, live."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from ...choices import RunReason, RunStatus
from ...registry import registry
from ...run_filters import ERRORS, WINDOWS, RunFilters, page_after
from ...run_log import CONTENT_TYPES, LINES, export_rows
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


@require_GET
def run_export(request: HttpRequest, fmt: str) -> HttpResponse:
    """The runs matching the page's filter as JSON Lines or CSV, streamed (every page)."""
    access.require(request, access.VIEW)
    if fmt not in LINES:
        raise Http404("export as jsonl or csv")
    lines = LINES[fmt](export_rows(filters_of(request).ordered()))
    # Under ASGI (daphne) a sync iterator would be read whole before the first byte
    # goes out; batches read on the database thread keep the export streamed.
    body = batched(lines) if isinstance(request, ASGIRequest) else lines
    response = StreamingHttpResponse(body, content_type=CONTENT_TYPES[fmt])
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="runs-{stamp}.{fmt}"'
    return response


EXPORT_BATCH = 500  # lines read per hop to the database thread


async def batched(lines: Iterator[str]) -> AsyncIterator[str]:
    while True:
        chunk = await sync_to_async(_next_lines, thread_sensitive=True)(lines)
        if not chunk:
            return
        yield chunk


def _next_lines(lines: Iterator[str]) -> str:
    return "".join(itertools.islice(lines, EXPORT_BATCH))
