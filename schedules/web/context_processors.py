"""On every page: banners (no scheduler alive, duplicates, orphans, failed imports) and the
header's count of open incidents."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils import timezone

from ..models import Incident, Schedule, SchedulerInstance
from ..registry import registry
from ..selectors import runs_waiting_for_a_worker
from .access import VIEW


def banners(request: HttpRequest) -> dict:
    if not request.user.is_authenticated or request.headers.get("HX-Request"):
        return {}
    found = []
    alive = SchedulerInstance.objects.alive().exists()
    if not alive:
        found.append(
            ("danger", "No scheduler is running: nothing fires, and runs you start stay queued. "
             "Start one with `manage.py runscheduler`.")
        )  # fmt: skip
    waiting = runs_waiting_for_a_worker(now=timezone.now()) if alive else 0
    if waiting:
        found.append(
            ("warning", f"{waiting} run(s) waiting for a worker: every worker process is busy "
             "(SILLO_MAX_WORKERS). They start as workers free up.")
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
