"""Declared tasks, with duplicates and failed imports flagged."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from ...registry import registry
from .. import access


@require_GET
def task_list(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    tasks = []
    for name in sorted(registry.declarations):
        found = registry.declarations[name]
        for declaration in found:
            tasks.append({"declaration": declaration, "duplicate": len(found) > 1})
    context = {
        "tasks": tasks,
        "failed_imports": sorted(registry.failed_imports.items()),
        **access.abilities(request.user),
    }
    return TemplateResponse(request, "schedules/tasks.html", context)
