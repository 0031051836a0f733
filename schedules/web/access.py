"""Who may do what. Every view that takes an id starts with `schedule_for`."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404

from ..models import Run, Schedule

VIEW = "schedules.view_schedule"
OPERATE = "schedules.operate_schedule"
ADD = "schedules.add_schedule"
CHANGE = "schedules.change_schedule"
DELETE = "schedules.delete_schedule"


def require(request: HttpRequest, perm: str) -> None:
    if not request.user.has_perm(perm):
        raise PermissionDenied(f"you need the permission {perm}")


def schedule_for(request: HttpRequest, pk: int, perm: str = VIEW) -> Schedule:
    """The schedule, if the user may view it and has `perm`: 404 unknown, 403 not allowed."""
    require(request, VIEW)
    schedule = get_object_or_404(Schedule, pk=pk)
    require(request, perm)
    return schedule


def run_for(request: HttpRequest, pk: int, perm: str = VIEW) -> Run:
    """The run, if the user may view runs and has `perm`: 404 unknown, 403 not allowed."""
    require(request, VIEW)
    run = get_object_or_404(Run, pk=pk)
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
