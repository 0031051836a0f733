from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ...selectors import health_report


@login_not_required
@never_cache
@require_GET
def health(request: HttpRequest) -> JsonResponse:
    healthy, report = health_report(now=timezone.now())
    return JsonResponse(report, status=200 if healthy else 503)
