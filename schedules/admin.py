"""The Django admin for raw records; its actions call the service functions."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from . import chains, services, tokens
from .inputs import schedule_problems
from .models import (
    ApiToken,
    AuditEvent,
    Incident,
    IncidentEvent,
    Notification,
    Run,
    Schedule,
    SchedulerInstance,
)
from .registry import OPTION_NAMES
from .timing import InvalidTrigger
from .validation import InvalidKwargs, json_text, kwargs_from_text, parse_trigger


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


@admin.action(description="Cancel", permissions=["operate"])
def cancel(modeladmin, request, queryset) -> None:
    _each(request, queryset, services.schedule_cancel, "cancelled")


@admin.action(description="Run now", permissions=["operate"])
def run_now(modeladmin, request, queryset) -> None:
    _each(request, queryset, services.schedule_run_now, "queued a run for")


OPTIONAL_WITH_DEFAULT = ("dispatch", "rate_period", "rate_mode")


class ScheduleAdminForm(forms.ModelForm):
    """Raw trigger and kwargs JSON, checked by the same gate as every other path.

    They are plain text fields (Django's JSON form field lets 4,300-digit
    numbers and NaN through to a crash); saving goes through the services, so
    `next_run_at` is recomputed and a trigger that never fires is refused.
    """

    trigger = forms.CharField(widget=forms.Textarea(attrs={"rows": 6, "cols": 80}))
    kwargs = forms.CharField(widget=forms.Textarea(attrs={"rows": 4, "cols": 80}), required=False)
    then = forms.CharField(
        required=False, help_text="follow-up schedule codes on success, comma-separated"
    )
    catch = forms.CharField(
        required=False, help_text="follow-up schedule codes on final failure, comma-separated"
    )

    class Meta:
        model = Schedule
        fields = ["code", "task_name", "trigger", "kwargs", "tz", *OPTION_NAMES]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        for name in OPTIONAL_WITH_DEFAULT:  # left out: the model's default
            self.fields[name].required = False
        if self.instance.pk:
            self.initial["trigger"] = json_text(self.instance.trigger)
            self.initial["kwargs"] = json_text(self.instance.kwargs)
        for name in ("then", "catch"):
            self.initial[name] = ", ".join(map(str, chains.codes_of(self.initial.get(name))))

    def clean_trigger(self) -> dict:
        try:
            trigger = parse_trigger(self.cleaned_data["trigger"])
            trigger.next_fire(timezone.now())  # within the search budget, or refused here
        except InvalidTrigger as exc:
            raise forms.ValidationError(str(exc)) from None
        return trigger.to_spec()

    def clean_kwargs(self) -> dict:
        try:
            return kwargs_from_text(self.cleaned_data.get("kwargs") or "{}")
        except InvalidKwargs as exc:
            raise forms.ValidationError(str(exc).removeprefix("kwargs: ")) from None

    def clean(self) -> dict:
        data = super().clean()
        for name in OPTIONAL_WITH_DEFAULT:
            if data.get(name) in (None, ""):
                data[name] = Schedule._meta.get_field(name).default
        if "kwargs" in data and data.get("task_name"):
            # The checks the form, the API, the CLI and imports make: a task this code
            # runs, kwargs that fit it, a known zone, options within their limits.
            problems = schedule_problems(
                task_name=data["task_name"], kwargs=data["kwargs"], tz=data.get("tz") or "",
                options={name: data[name] for name in OPTION_NAMES if name in data},
                current_task=self.instance.task_name if self.instance.pk else None,
            )  # fmt: skip
            for name, problem in problems.items():
                if name in self.fields and name not in self.errors:
                    self.add_error(name, problem)
        data["then"] = chains.codes_of(data.get("then"))
        data["catch"] = chains.codes_of(data.get("catch"))
        code = self.instance.code if self.instance.pk else data.get("code")
        if code:
            # The services' gate, as field errors: codes, cycles, depth, result_as.
            problems = chains.chain_problems(
                code=code, then=data["then"], catch=data["catch"],
                result_as=data.get("result_as") or "", kept=chains.kept_by(self.instance),
            )  # fmt: skip
            for name, problem in problems.items():
                self.add_error(name, problem)
        return data


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    form = ScheduleAdminForm
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
    # Status changes go through the actions (the services' transitions), never a raw edit.
    readonly_fields = ["status", "source", "next_run_at", "invalid_reason", "last_run_at",
                       "last_outcome", "last_error", "last_duration", "run_count", "error_count",
                       "created_at", "updated_at"]  # fmt: skip
    actions = [pause, resume, cancel, run_now]

    def has_operate_permission(self, request) -> bool:
        return request.user.has_perm("schedules.operate_schedule")

    def save_model(self, request, obj: Schedule, form, change: bool) -> None:
        """Create or update through the services: the same checks and next slot as
        the dashboard. Errors they raise land on the form's fields (see save_form)."""
        data = form.cleaned_data
        options = {name: data[name] for name in OPTION_NAMES if name in data}
        if change:
            # Only what changed is saved (never a next slot or counter read at page load).
            services.schedule_update(
                schedule=obj, trigger=data["trigger"], task_name=data["task_name"],
                kwargs=data["kwargs"], tz=data.get("tz") or obj.tz, by=request.user,
                via="admin", **options,
            )  # fmt: skip
            return
        created = services.schedule_create(
            code=data["code"],
            task_name=data["task_name"],
            trigger=data["trigger"],
            kwargs=data["kwargs"],
            tz=data.get("tz") or None,
            by=request.user,
            via="admin",
            **options,
        )
        obj.pk = created.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj: Schedule) -> None:
        """Through the service: audited, and its open incidents closed."""
        services.schedule_delete(schedule=obj, by=request.user, via="admin")

    def delete_queryset(self, request, queryset) -> None:
        for schedule in queryset:
            services.schedule_delete(schedule=schedule, by=request.user, via="admin")


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
        "parent",
        "depth",
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

    list_display = [
        "pk", "event", "channel_label", "status", "size", "attempts", "created_at", "sent_at",
    ]  # fmt: skip
    list_filter = ["status", "event"]
    exclude = ["env_url"]  # it may carry a webhook secret
    readonly_fields = [
        "incident", "channel", "payload", "claimed_by", "claimed_at", "answer", "group", "size",
    ]  # fmt: skip
