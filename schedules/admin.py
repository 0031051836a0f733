"""The Django admin for raw records; its actions call the service functions."""

from __future__ import annotations

from django.contrib import admin, messages

from . import services, tokens
from .models import ApiToken, Run, Schedule, SchedulerInstance


def _each(request, queryset, operation, verb: str, **extra) -> None:
    done = 0
    for schedule in queryset:
        try:
            operation(schedule=schedule, **extra)
            done += 1
        except (services.InvalidTransition, services.RunRefused) as exc:
            messages.warning(request, str(exc))
    messages.info(request, f"{verb}: {done} schedule(s)")


@admin.action(description="Pause", permissions=["operate"])
def pause(modeladmin, request, queryset) -> None:
    _each(request, queryset, services.schedule_pause, "paused")


@admin.action(description="Resume", permissions=["operate"])
def resume(modeladmin, request, queryset) -> None:
    _each(request, queryset, services.schedule_resume, "resumed")


@admin.action(description="Run now", permissions=["operate"])
def run_now(modeladmin, request, queryset) -> None:
    _each(request, queryset, services.schedule_run_now, "queued a run for", by=request.user)


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    list_display = [
        "code",
        "task_name",
        "status",
        "source",
        "next_run_at",
        "last_outcome",
        "run_count",
        "error_count",
    ]
    list_filter = ["status", "source", "last_outcome", "overlap", "misfire"]
    search_fields = ["code", "task_name"]
    readonly_fields = ["next_run_at", "last_run_at", "last_outcome", "last_error", "last_duration",
                       "run_count", "error_count", "created_at", "updated_at"]  # fmt: skip
    actions = [pause, resume, run_now]

    def has_operate_permission(self, request) -> bool:
        return request.user.has_perm("schedules.operate_schedule")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "schedule_code",
        "task_name",
        "status",
        "reason",
        "attempt",
        "slot",
        "started_at",
        "finished_at",
    ]
    list_filter = ["status", "reason"]
    search_fields = ["schedule_code", "task_name", "error"]
    date_hierarchy = "queued_at"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(SchedulerInstance)
class SchedulerInstanceAdmin(admin.ModelAdmin):
    list_display = ["id", "host", "pid", "started_at", "heartbeat_at", "stopped_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.action(description="Revoke")
def revoke(modeladmin, request, queryset) -> None:
    for token in queryset:
        tokens.token_revoke(token=token)
    messages.info(request, f"revoked: {queryset.count()} token(s)")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are issued on the user's own API tokens page (the only place the secret
    is ever shown); here an administrator sees and revokes them."""

    list_display = ["name", "user", "prefix", "created_at", "expires_at", "last_used_at",
                    "revoked_at"]  # fmt: skip
    list_filter = ["revoked_at"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = ["user", "name", "prefix", "digest", "created_at", "last_used_at",
                       "revoked_at"]  # fmt: skip
    actions = [revoke]

    def has_add_permission(self, request) -> bool:
        return False
