"""The OpenAPI schema and its rendered docs (Swagger UI from the ninja package).

Served by our own views, with paths computed from the request, so both work
under any URL prefix and inside any URL namespace. The docs page uses the
Swagger UI files django-ninja ships, served from the package directory, so a
host needs neither "ninja" in INSTALLED_APPS nor a CDN.
"""

from __future__ import annotations

import json
from pathlib import Path

import ninja
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.utils.html import escape
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from ninja import NinjaAPI

from .. import tokens
from .errors import error_response

ASSETS_DIR = Path(ninja.__file__).parent / "static" / "ninja"
ASSETS = {
    "swagger-ui.css": "text/css",
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui-init.js": "text/javascript",
    "favicon.png": "image/png",
}
PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title}</title>
  <link rel="stylesheet" href="{assets}swagger-ui.css">
  <link rel="icon" href="{assets}favicon.png">
</head>
<body data-csrf-token="{csrf}" data-api-csrf="true">
  <script type="application/json" id="swagger-settings">{settings}</script>
  <div id="swagger-ui"></div>
  <script src="{assets}swagger-ui-bundle.js"></script>
  <script src="{assets}swagger-ui-init.js"></script>
</body>
</html>
"""


def schema_view(api: NinjaAPI):
    @never_cache
    @require_GET
    def openapi_json(request: HttpRequest) -> HttpResponse:
        """The schema, for a logged-in user or a valid token (401 otherwise)."""
        if not request.user.is_authenticated:
            header = request.headers.get("Authorization", "")
            if not header.lower().startswith("bearer "):
                return error_response(401, {None: "log in, or send an API token"})
            try:
                tokens.token_authenticate(header[len("bearer ") :])
            except tokens.TokenRejected as exc:
                return error_response(401, {None: str(exc)})
        base = request.path.removesuffix("openapi.json")
        schema = api.get_openapi_schema(path_prefix=base.lstrip("/"))
        return JsonResponse(schema, json_dumps_params={"ensure_ascii": False})

    return openapi_json


def docs_view(api: NinjaAPI):
    @login_required
    @require_GET
    def docs(request: HttpRequest) -> HttpResponse:
        base = request.path.removesuffix("docs/")
        settings = {"url": f"{base}openapi.json", "layout": "BaseLayout", "deepLinking": True}
        html = PAGE.format(
            title=escape(api.title),
            assets=escape(f"{base}docs/assets/"),
            csrf=escape(get_token(request)),
            # In a <script type="application/json">: only "</" could end it early.
            settings=json.dumps(settings).replace("</", "<\\/"),
        )
        return HttpResponse(html)

    return docs


@login_required
@require_GET
def docs_asset(request: HttpRequest, name: str) -> HttpResponse:
    if name not in ASSETS:
        raise Http404(name)
    response = FileResponse(open(ASSETS_DIR / name, "rb"), content_type=ASSETS[name])  # noqa: SIM115
    response["Cache-Control"] = "private, max-age=86400"
    return response
