"""The schedules list (home page): search, filters, pagination, rows that act in place."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from ...models import RunStatus, ScheduleStatus
from ...selectors import filtered_schedules
from .. import access
from ..paging import KeyedPaginator
from ..rows import build_rows

PAGE_SIZE = 50


@require_GET
def schedule_list(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    paginator = KeyedPaginator(filtered_schedules(request.GET), PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "page": page,
        "rows": build_rows(list(page.object_list), request.user),
        "query": query.urlencode(),
        "params": request.GET,
        "statuses": ScheduleStatus.values,
        "outcomes": RunStatus.values,
        **access.abilities(request.user),
    }
    template = (
        "schedules/list.html#table"
        if request.htmx and not request.htmx.boosted
        else "schedules/list.html"
    )
    return TemplateResponse(request, template, context)
