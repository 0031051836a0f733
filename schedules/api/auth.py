"""Who is calling: a bearer token or the dashboard's session (with CSRF), the
permission checks shared with the dashboard, and the per-token throttle."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from ninja.security import APIKeyCookie, HttpBearer
from ninja.throttling import SimpleRateThrottle
from ninja.utils import check_csrf

from .. import tokens
from ..conf import setting

# The dashboard's permissions, checked the same way here (web/access.py).
from ..web.access import ADD, CHANGE, DELETE, OPERATE, VIEW
from .errors import Problem

__all__ = ["ADD", "CHANGE", "DELETE", "OPERATE", "VIEW", "allowed", "caller", "require"]

SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")


class _Permitted:
    """Checks an operation's permissions as the caller is authenticated: before ninja
    reads the body, so a caller who may not do this gets 403 whatever it sent, never
    a 422 about a body it was not allowed to send."""

    perms: tuple[str, ...] = ()

    def permitted(self, user: AbstractBaseUser) -> AbstractBaseUser:
        for perm in self.perms:
            if not user.has_perm(perm):
                raise Problem(403, {None: f"you need the permission {perm}"})
        return user


class BearerToken(_Permitted, HttpBearer):
    """`Authorization: Bearer sdk_...`: the token's user, with that user's permissions."""

    def __init__(self, perms: tuple[str, ...] = ()) -> None:
        self.perms = perms
        super().__init__()

    def authenticate(self, request: HttpRequest, token: str) -> AbstractBaseUser:
        found = tokens.token_authenticate(token)  # TokenRejected -> 401 saying why
        request.user = found.user
        request.api_token = found  # type: ignore[attr-defined]
        return self.permitted(found.user)


class DashboardSession(_Permitted, APIKeyCookie):
    """The dashboard's login session; unsafe methods need the CSRF token
    (the `X-CSRFToken` header or form field), as the dashboard's own POSTs do."""

    param_name = settings.SESSION_COOKIE_NAME

    def __init__(self, perms: tuple[str, ...] = ()) -> None:
        self.perms = perms
        super().__init__()

    def _get_key(self, request: HttpRequest) -> str | None:
        return request.COOKIES.get(self.param_name)

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if request.method not in SAFE_METHODS and check_csrf(request) is not None:
            raise Problem(
                403,
                {None: "CSRF check failed: send the X-CSRFToken header with a session login, "
                       "or use an API token"},
            )  # fmt: skip
        return self.permitted(user)


def allowed(*perms: str) -> list:
    """The API's authentication, checking `perms` before the operation's parameters
    and body are read: VIEW for every operation (urls.py), and the action's permission
    for those with a body. The views check again, with the object (404 before 403)."""
    return [BearerToken(perms), DashboardSession(perms)]


class TokenThrottle(SimpleRateThrottle):
    """At most SILLO_API_THROTTLE requests per token (per user for a session)."""

    scope = "sillo"
    cache_format = "sillo-api-throttle:%(ident)s"

    def __init__(self) -> None:
        super().__init__(rate="1/s")  # replaced by the setting at each request

    def allow_request(self, request: HttpRequest) -> bool:
        rate = setting("SILLO_API_THROTTLE")
        if not rate:
            return True
        self.num_requests, self.duration = self.parse_rate(rate)
        return super().allow_request(request)

    def get_cache_key(self, request: HttpRequest) -> str | None:
        token = getattr(request, "api_token", None)
        if token is not None:
            return self.cache_format % {"ident": f"token-{token.pk}"}
        user = getattr(request, "auth", None)
        if user is not None:
            return self.cache_format % {"ident": f"user-{user.pk}"}
        return None


def caller(request: HttpRequest) -> AbstractBaseUser:
    return request.auth  # type: ignore[attr-defined]


def require(request: HttpRequest, perm: str) -> None:
    """403 unless the caller (a session's user or a token's) has `perm`."""
    if not caller(request).has_perm(perm):
        raise Problem(403, {None: f"you need the permission {perm}"})
