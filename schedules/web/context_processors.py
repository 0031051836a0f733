"""On every page: banners (no scheduler alive, duplicates, orphans, failed imports) and the
header's count of open incidents."""

from __future__ import annotations

from django.http import HttpRequest

from ..models import Incident, Schedule, SchedulerInstance
from ..registry import registry
from .access import VIEW


def banners(request: HttpRequest) -> dict:
    if not request.user.is_authenticated or request.headers.get("HX-Request"):
        return {}
    found = []
    if not SchedulerInstance.objects.alive().exists():
        found.append(
            ("danger", "No scheduler is running: nothing fires, and runs you start stay queued. "
             "Start one with `manage.py runscheduler`.")
        )  # fmt: skip
    duplicates = sorted(registry.duplicate_names())
    if duplicates:
        found.append(
            ("warning", f"Tasks declared more than once (never run): {', '.join(duplicates)}")
        )
    for module, error in sorted(registry.failed_imports.items()):
        found.append(("warning", f"Task module {module} failed to import: {error}"))
    orphans = Schedule.objects.with_flag("orphan", registry).count()
    if orphans:
        found.append(("warning", f"{orphans} schedule(s) name a task no code declares (orphans)."))
    context = {"banners": found}
    if request.user.has_perm(VIEW):
        # The header's live count starts here; /ws/incidents/ keeps it current.
        context["incident_count"] = Incident.objects.open().count()
    return context
