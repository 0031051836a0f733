"""Show times in the operator's zone (the browser reports it in the `tz` cookie)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from ..timing import InvalidTrigger, get_zone


class OperatorTimezoneMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Anyone can set this cookie (a sibling subdomain too): a name that is not
        # a zone (a folder such as "Europe", a path, junk) is ignored, never a 500.
        name = request.COOKIES.get("tz", "")
        try:
            if name and len(name) <= 64:
                timezone.activate(get_zone(name))
            else:
                timezone.deactivate()
        except InvalidTrigger:
            timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
