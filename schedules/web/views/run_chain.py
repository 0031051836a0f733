"""The chain of a run (parents, retries, follow-ups), as the run page's partial.

Served apart from the run page, so the page's live hook (static/schedules/js/
run_chain.js) can swap it in again when a run of the chain changes.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from ... import chain_reads
from .. import access


@require_GET
def run_chain(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run_for(request, pk)
    context = {"run": run, "chain": chain_reads.run_chain(run)}
    return TemplateResponse(request, "schedules/partials/run_chain.html", context)
