"""Reads of incidents and deliveries for the dashboard: open ones, a schedule's, the log."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from ..models import Schedule
from .models import Incident, IncidentEvent, Notification, NotificationStatus


def open_incidents() -> QuerySet[Incident]:
    return Incident.objects.open().order_by("-opened_at", "-pk")


def closed_incidents() -> QuerySet[Incident]:
    return Incident.objects.filter(closed_at__isnull=False).order_by("-closed_at", "-pk")


def incidents_of(schedule: Schedule, limit: int = 10) -> list[Incident]:
    return list(Incident.objects.filter(schedule=schedule).order_by("-opened_at", "-pk")[:limit])


def delivery_summary() -> list[dict]:
    """Per channel: sent, failed and retrying (pending after a failed attempt) counts, and
    how many went in summaries (a summary counts once, under its own status)."""
    retrying = Q(status=NotificationStatus.PENDING, attempts__gt=0) | Q(
        status=NotificationStatus.SENDING
    )
    return list(
        Notification.objects.values("channel_label")
        .annotate(
            sent=Count("pk", filter=Q(status=NotificationStatus.SENT)),
            failed=Count("pk", filter=Q(status=NotificationStatus.FAILED)),
            retrying=Count("pk", filter=retrying),
            waiting=Count("pk", filter=Q(status=NotificationStatus.PENDING, attempts=0)),
            grouped=Count("pk", filter=Q(status=NotificationStatus.GROUPED)),
        )
        .order_by("channel_label")
    )


def delivery_log(limit: int = 50) -> list[Notification]:
    rows = Notification.objects.select_related("incident", "group")
    return list(rows.order_by("-created_at", "-pk")[:limit])


def probes_among(run_ids: list[int]) -> set[int]:
    """Which of these runs are half-open probes (checks.check_probes queued them)."""
    if not run_ids:
        return set()
    rows = IncidentEvent.objects.filter(event="probe", run_id__in=run_ids)
    return set(rows.values_list("run_id", flat=True))
