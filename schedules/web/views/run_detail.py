"""The run page: what one run was asked, what it did and printed (live while it runs),
and its chain."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from ... import chain_reads
from ...models import Run
from .. import access
from ..run_page import run_context


@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run_for(request, pk, queryset=Run.objects.for_page())
    context = {**run_context(run, request.user), "chain": chain_reads.run_chain(run)}
    return TemplateResponse(request, "schedules/run_detail.html", context)
