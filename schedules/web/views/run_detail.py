"""The run page: one run's record and its chain.

A minimal page (its own fields, and the chain partial); the run-insight work
fills it out and keeps including `schedules/partials/run_chain.html`.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from ... import selectors
from .. import access


@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = access.run_for(request, pk)
    context = {"run": run, "chain": selectors.run_chain(run)}
    return TemplateResponse(request, "schedules/run_detail.html", context)
