"""/stats: jobs by status, run totals, the queue and live schedulers."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils import timezone
from ninja import Router

from ...selectors import scheduler_stats
from ..auth import VIEW, require
from ..errors import error_responses
from ..schemas import StatsOut

router = Router(tags=["stats"])


@router.get("/stats", response={200: StatsOut, **error_responses()})
def stats(request: HttpRequest):
    """Counts for dashboards and monitors (what /health/ reports, and the queue)."""
    require(request, VIEW)
    return scheduler_stats(now=timezone.now())
