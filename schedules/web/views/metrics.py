"""GET /metrics for Prometheus: off unless the deployment turns it on."""

from __future__ import annotations

import hmac

from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from ...conf import setting
from ..metrics import SilloCollector


@login_not_required
@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    mode = setting("SILLO_METRICS")
    if mode == "off":
        raise Http404("metrics are off (SILLO_METRICS)")
    if mode == "token":
        token = setting("SILLO_METRICS_TOKEN")
        expected = f"Bearer {token}"
        # Bytes, not str: compare_digest refuses non-ASCII text with a TypeError.
        given = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
        if not token or not hmac.compare_digest(given, expected.encode("utf-8")):
            return HttpResponse(
                "a bearer token is required\n", status=401, content_type="text/plain"
            )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SilloCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
