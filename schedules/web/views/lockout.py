"""The answer to a login refused by throttling (django-axes): the login page, 429."""

from __future__ import annotations

import math

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def locked_out(
    request: HttpRequest, response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """django-axes' AXES_LOCKOUT_CALLABLE, for the dashboard's and the admin's login:
    the login page saying why and for how long, with status 429."""
    cooloff = getattr(settings, "AXES_COOLOFF_TIME", None)
    if cooloff:
        minutes = max(1, math.ceil(cooloff.total_seconds() / 60))
        wait = f"try again in {minutes} minute{'s' if minutes != 1 else ''}"
    else:
        wait = "ask an administrator to unlock the account"
    context = {
        "form": AuthenticationForm(request),
        "locked_out": f"Too many failed login attempts: {wait}.",
        "next": request.GET.get("next", "")[:2000],
    }
    # Rendered now: django-axes returns it from its middleware, past the template stage.
    return render(request, "registration/login.html", context, status=429)
