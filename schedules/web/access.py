"""Who may do what. Every view that takes an id starts with `schedule_for`.

Login is the app's own business (`login_required`, applied to every URL in
`urls.py`): a host need not use Django's LoginRequiredMiddleware.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, resolve_url
from django_htmx.http import HttpResponseClientRedirect

from ..models import Run, Schedule
from ..params import valid_id

VIEW = "schedules.view_schedule"
OPERATE = "schedules.operate_schedule"
ADD = "schedules.add_schedule"
CHANGE = "schedules.change_schedule"
DELETE = "schedules.delete_schedule"


def login_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Anonymous users go to the host's LOGIN_URL and come back; htmx requests too.

    An htmx request (a row action after the session expired) gets a client
    redirect of the whole page, not the login form swapped into a row.
    """

    @wraps(view)
    def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if getattr(request, "htmx", False):
            back = request.headers.get("HX-Current-URL") or request.get_full_path()
            login = redirect_to_login(back, resolve_url(settings.LOGIN_URL))
            return HttpResponseClientRedirect(login.url)
        return redirect_to_login(request.get_full_path(), resolve_url(settings.LOGIN_URL))

    wrapper.login_required = True
    return wrapper


def require(request: HttpRequest, perm: str) -> None:
    if not request.user.has_perm(perm):
        raise PermissionDenied(f"you need the permission {perm}")


def schedule_for(request: HttpRequest, pk: int, perm: str = VIEW) -> Schedule:
    """The schedule, if the user may view it and has `perm`: 404 unknown, 403 not allowed."""
    require(request, VIEW)
    if not valid_id(pk):  # beyond the database's integers: no such schedule, not a crash
        raise Http404("no such schedule")
    schedule = get_object_or_404(Schedule, pk=pk)
    require(request, perm)
    return schedule


def run_for(request: HttpRequest, pk: int, perm: str = VIEW, queryset=None) -> Run:
    """The run, if the user may view runs and has `perm`: 404 unknown, 403 not allowed."""
    require(request, VIEW)
    if not valid_id(pk):
        raise Http404("no such run")
    run = get_object_or_404(Run.objects.all() if queryset is None else queryset, pk=pk)
    require(request, perm)
    return run


def abilities(user) -> dict[str, bool]:
    """What the templates show: buttons only for what the user may do."""
    return {
        "can_operate": user.has_perm(OPERATE),
        "can_add": user.has_perm(ADD),
        "can_change": user.has_perm(CHANGE),
        "can_delete": user.has_perm(DELETE),
    }
