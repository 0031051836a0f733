"""The Django admin for raw records; its actions call the service functions."""

from __future__ import annotations

from django.contrib import admin, messages

from . import services
from .models import (
    AuditEvent,
    Incident,
    IncidentEvent,
    Notification,
    Run,
    Schedule,
    SchedulerInstance,
)


def _each(request, queryset, operation, verb: str) -> None:
    done = 0
    for schedule in queryset:
        try:
            operation(schedule=schedule, by=request.user, via="admin")
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
    _each(request, queryset, services.schedule_run_now, "queued a run for")


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


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the services write these, nobody edits them."""

    list_display = ["at", "schedule_code", "action", "actor", "via", "detail"]
    list_filter = ["action", "via"]
    search_fields = ["schedule_code", "actor"]
    date_hierarchy = "at"

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


class IncidentEventInline(admin.TabularInline):
    model = IncidentEvent
    extra = 0
    readonly_fields = ["at", "event", "text", "run_id"]


@admin.register(Incident)
class IncidentAdmin(admin.ModelAdmin):
    list_display = ["pk", "schedule_code", "kind", "opened_at", "closed_at", "summary"]
    list_filter = ["kind", ("closed_at", admin.EmptyFieldListFilter)]
    search_fields = ["schedule_code", "task_name", "summary"]
    inlines = [IncidentEventInline]


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    """The outbox and its delivery log (the channel's URL is not part of the record)."""

    list_display = ["pk", "event", "channel_label", "status", "attempts", "created_at", "sent_at"]
    list_filter = ["status", "event"]
    exclude = ["env_url"]  # it may carry a webhook secret
    readonly_fields = ["incident", "channel", "payload", "claimed_by", "claimed_at", "answer"]
