"""The app's URLs: `path("<any prefix>/", include("schedules.urls"))`.

Names are namespaced (`schedules:home`). Every view requires login here, the
way Django's LoginRequiredMiddleware would, so a host without that
middleware gets the same protection; a view opts out with Django's own
`@login_not_required` (health, metrics). Permissions are each view's
business (`web/access.py`). Views live in `schedules.web.views`.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path

from .web.access import login_required
from .web.views import (
    alert_rules,
    api_tokens,
    audit,
    channels,
    health,
    incidents,
    live,
    metrics,
    run_actions,
    run_chain,
    run_detail,
    run_list,
    run_with,
    schedule_actions,
    schedule_detail,
    schedule_edit,
    schedule_list,
    socket,
    task_list,
)

app_name = "schedules"


def _login_by_default(patterns: list[URLPattern | URLResolver]) -> list:
    """Wrap each view in `login_required` unless it is marked `@login_not_required`.

    Included URL sets (a resolver, such as the JSON API with its own token
    authentication) are left to their own rules.
    """
    for pattern in patterns:
        if isinstance(pattern, URLPattern) and getattr(pattern.callback, "login_required", True):
            pattern.callback = login_required(pattern.callback)
    return patterns


urlpatterns = _login_by_default(
    [
        path("", schedule_list.schedule_list, name="home"),
        path("health/", health.health, name="health"),
        path("metrics", metrics.metrics, name="metrics"),
        path("schedules/new/", schedule_edit.schedule_create, name="schedule-create"),
        path("schedules/bulk/", schedule_actions.bulk_action, name="schedule-bulk"),
        path("schedules/trigger-editor/", schedule_edit.trigger_editor, name="trigger-editor"),
        path("schedules/preview/", schedule_edit.trigger_preview, name="trigger-preview"),
        path("schedules/<int:pk>/", schedule_detail.schedule_detail, name="schedule-detail"),
        path("schedules/<int:pk>/edit/", schedule_edit.schedule_edit, name="schedule-edit"),
        path("schedules/<int:pk>/run/", schedule_actions.schedule_run_now, name="schedule-run"),
        path(
            "schedules/<int:pk>/delete/", schedule_actions.schedule_delete, name="schedule-delete"
        ),
        path(
            "schedules/<int:pk>/drop-queued/",
            schedule_actions.schedule_drop_queued,
            name="schedule-drop-queued",
        ),
        path("runs/", run_list.run_list, name="run-list"),
        path("runs/export.<str:fmt>", run_list.run_export, name="run-export"),
        path("runs/<int:pk>/", run_detail.run_detail, name="run-detail"),
        path("runs/<int:pk>/chain/", run_chain.run_chain, name="run-chain"),
        path("runs/<int:pk>/cancel/", run_actions.run_cancel, name="run-cancel"),
        path("runs/<int:pk>/rerun/", run_with.run_rerun, name="run-rerun"),
        path("schedules/<int:pk>/run-with/", run_with.schedule_run_with, name="schedule-run-with"),
        path("schedules/<int:pk>/alerts/", alert_rules.schedule_alerts, name="schedule-alerts"),
        path(
            "schedules/<int:pk>/alerts/test/",
            alert_rules.schedule_alerts_test,
            name="schedule-alerts-test",
        ),
        path(
            "schedules/<int:pk>/<slug:action>/",
            schedule_actions.schedule_action,
            name="schedule-action",
        ),
        path("live/", live.live_log, name="live-log"),
        path("audit/", audit.audit_list, name="audit-list"),
        path("tasks/", task_list.task_list, name="task-list"),
        path("incidents/", incidents.incident_list, name="incident-list"),
        path("incidents/<int:pk>/", incidents.incident_detail, name="incident-detail"),
        path("channels/", channels.channel_list, name="channel-list"),
        path("channels/<int:pk>/toggle/", channels.channel_toggle, name="channel-toggle"),
        path("channels/<int:pk>/delete/", channels.channel_delete, name="channel-delete"),
        path("channels/<int:pk>/test/", channels.channel_test, name="channel-test"),
        path("channels/env/<int:index>/test/", channels.env_channel_test, name="env-channel-test"),
        # The live pages' websocket (schedules.routing serves it at this same path):
        # named here so templates and the ASGI routes follow the host's prefix.
        path("ws/runs/", socket.run_events, name="run-events"),
        path("ws/incidents/", socket.run_events, name="incident-events"),
        path("account/api-tokens/", api_tokens.token_list, name="api-tokens"),
        path(
            "account/api-tokens/<int:pk>/revoke/", api_tokens.token_revoke, name="api-token-revoke"
        ),
        # The JSON API (schedules/api/): its own token authentication; its URLs resolve
        # by path, never by name.
        path("api/v1/", include("schedules.api.urls")),
    ]
)
