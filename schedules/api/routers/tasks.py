"""/tasks: the declared tasks, duplicates and failed imports flagged."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from ...registry import registry
from ..auth import VIEW, require
from ..errors import error_responses
from ..presenters import task_body
from ..schemas import TaskList

router = Router(tags=["tasks"])


@router.get("/tasks", response={200: TaskList, **error_responses()})
def list_tasks(request: HttpRequest):
    """Every declaration this process knows, by name; a duplicate name lists each."""
    require(request, VIEW)
    results = [
        task_body(declaration, duplicate=len(found) > 1)
        for name, found in sorted(registry.declarations.items())
        for declaration in found
    ]
    return {"results": results, "failed_imports": dict(sorted(registry.failed_imports.items()))}
