"""The app's URLs: `include("schedules.urls")`. Views live in `schedules.web.views`."""

from __future__ import annotations

from django.urls import path

from .web.views import (
    alert_rules,
    channels,
    health,
    incidents,
    live,
    metrics,
    run_actions,
    schedule_actions,
    schedule_detail,
    schedule_edit,
    schedule_list,
    task_list,
)

urlpatterns = [
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
    path("schedules/<int:pk>/delete/", schedule_actions.schedule_delete, name="schedule-delete"),
    path("schedules/<int:pk>/alerts/", alert_rules.schedule_alerts, name="schedule-alerts"),
    path(
        "schedules/<int:pk>/alerts/test/",
        alert_rules.schedule_alerts_test,
        name="schedule-alerts-test",
    ),
    path(
        "schedules/<int:pk>/drop-queued/",
        schedule_actions.schedule_drop_queued,
        name="schedule-drop-queued",
    ),
    path("runs/<int:pk>/cancel/", run_actions.run_cancel, name="run-cancel"),
    path(
        "schedules/<int:pk>/<slug:action>/",
        schedule_actions.schedule_action,
        name="schedule-action",
    ),
    path("live/", live.live_log, name="live-log"),
    path("tasks/", task_list.task_list, name="task-list"),
    path("incidents/", incidents.incident_list, name="incident-list"),
    path("incidents/<int:pk>/", incidents.incident_detail, name="incident-detail"),
    path("channels/", channels.channel_list, name="channel-list"),
    path("channels/<int:pk>/toggle/", channels.channel_toggle, name="channel-toggle"),
    path("channels/<int:pk>/delete/", channels.channel_delete, name="channel-delete"),
    path("channels/<int:pk>/test/", channels.channel_test, name="channel-test"),
    path("channels/env/<int:index>/test/", channels.env_channel_test, name="env-channel-test"),
]
