"""GET /health/: status and problems for anyone; the details for staff or a token."""

from __future__ import annotations

import hmac

from django.conf import settings
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
    if not _may_see_details(request):
        # Host names, pids and instance ids help an attacker, not a load balancer.
        report = {"status": report["status"], "problems": report["problems"]}
    return JsonResponse(report, status=200 if healthy else 503)


def _may_see_details(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    token = getattr(settings, "SILLO_HEALTH_TOKEN", "")
    if not token:
        return False
    given = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
    return hmac.compare_digest(given, f"Bearer {token}".encode())
