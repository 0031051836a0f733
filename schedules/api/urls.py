"""The API instance and its URLs, mounted by `schedules.urls` at `api/v1/`.

Every view here does its own authentication (a bearer token or the session,
see auth.py), so all are exempt from a site-wide LoginRequiredMiddleware,
which would answer an API client with a redirect to the login page.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI

from . import docs, errors
from .auth import VIEW, TokenThrottle, allowed
from .routers import runs, schedules, stats, tasks, triggers


class SilloAPI(NinjaAPI):
    def get_openapi_operation_id(self, operation) -> str:
        return operation.view_func.__name__


api = SilloAPI(
    title="Sillo Dash API",
    version="1",
    description="Schedules, runs and tasks of Sillo Dash. See docs/api.md.",
    urls_namespace="sillo-api-v1",
    # Every operation needs VIEW, checked before its parameters are read (auth.allowed).
    auth=allowed(VIEW),
    throttle=[TokenThrottle()],
    openapi_url=None,  # served by docs.py, whose paths follow the mount prefix
    docs_url=None,
)
errors.install(api)
for module in (schedules, runs, tasks, triggers, stats):
    api.add_router("", module.router)
# Incidents (docs/alerts.md) have no resource yet: add routers/incidents.py and mount it here.


# Exempt, as ninja's views are: a token client's POST to a mistyped path gets this
# JSON 404, not the CSRF middleware's HTML 403 (nothing here reads or writes anything).
@csrf_exempt
@login_not_required
def unknown(request: HttpRequest, rest: str = "") -> HttpResponse:
    return errors.error_response(404, {None: f"no API endpoint at {request.path}"})


def _json_errors(view):
    """Ninja answers a method it has no operation for in plain text; say it in our shape."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if response.status_code == 405 and "json" not in response.get("Content-Type", ""):
            allowed = response.get("Allow", "")
            problem = f"{request.method} is not allowed here; allowed: {allowed}"
            response = errors.error_response(405, {None: problem})
            response["Allow"] = allowed
        return response

    return login_not_required(wrapped)


def _patterns() -> list[URLPattern]:
    routes = [
        URLPattern(p.pattern, _json_errors(p.callback), p.default_args, p.name)
        for p in api.urls[0]
        if getattr(p, "name", None) != "api-root"
    ]
    return [
        *routes,
        path("openapi.json", login_not_required(docs.schema_view(api)), name="openapi-json"),
        path("docs/", docs.docs_view(api), name="docs"),
        path("docs/assets/<str:name>", docs.docs_asset, name="docs-asset"),
        re_path(r"^(?P<rest>.*)$", unknown),
    ]


urlpatterns = [path("", include((_patterns(), "sillo_api")))]
