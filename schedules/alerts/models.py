"""Incidents, their timelines, notification channels, the outbox, and run counters."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class IncidentKind(models.TextChoices):
    FAILING = "failing"
    LATE = "late"
    STUCK = "stuck"
    AUTO_PAUSED = "auto_paused", "auto-paused"


class IncidentQuerySet(models.QuerySet["Incident"]):
    def open(self) -> IncidentQuerySet:
        """Incidents not closed yet (incident_open_idx)."""
        return self.filter(closed_at__isnull=True)


class Incident(models.Model):
    """A schedule that is failing, late, stuck or auto-paused: opened once, closed once."""

    schedule = models.ForeignKey(
        "schedules.Schedule",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="incidents",
    )
    # Kept so the incident outlives a deleted schedule.
    schedule_code = models.CharField(max_length=200)
    task_name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=IncidentKind.choices)
    summary = models.TextField(blank=True)
    run_id = models.BigIntegerField(null=True, blank=True, help_text="the run that opened it")
    opened_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    last_notified_at = models.DateTimeField(null=True, blank=True)

    objects = IncidentQuerySet.as_manager()

    class Meta:
        ordering = ["-opened_at", "-id"]
        indexes = [
            # The header's live count and the incidents page's open list.
            models.Index(
                fields=["opened_at"], name="incident_open_idx", condition=Q(closed_at__isnull=True)
            ),
            # A schedule page's incidents.
            models.Index(fields=["schedule", "-opened_at"], name="incident_schedule_idx"),
        ]
        constraints = [
            # Opened once: two schedulers noticing the same problem open one incident.
            models.UniqueConstraint(
                fields=["schedule", "kind"],
                name="incident_one_open_per_kind",
                condition=Q(closed_at__isnull=True),
            ),
            models.CheckConstraint(
                condition=Q(kind__in=IncidentKind.values), name="incident_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_code} {self.kind} #{self.pk}"

    @property
    def is_open(self) -> bool:
        return self.closed_at is None


class IncidentEvent(models.Model):
    """One line of an incident's timeline."""

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField()
    event = models.CharField(max_length=24)
    text = models.TextField(blank=True)
    run_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.event} at {self.at}"


class ChannelKind(models.TextChoices):
    WEBHOOK = "webhook", "JSON webhook"
    EMAIL = "email"
    APPRISE = "apprise", "chat (apprise)"


class Channel(models.Model):
    """Where notifications go, configured in the dashboard (SILLO_NOTIFY adds more)."""

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=ChannelKind.choices)
    # Secret-bearing: shown masked after saving, never to Viewers.
    url = models.TextField()
    secret = models.CharField(max_length=200, blank=True, help_text="HMAC key of webhooks")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=ChannelKind.values), name="channel_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class NotificationStatus(models.TextChoices):
    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    # Carried by a summary (`group`) with others of its event and channel: not sent itself.
    GROUPED = "grouped"


class Notification(models.Model):
    """The outbox: one notification of one incident event to one channel, and its log.

    A summary (`size` > 0, no incident) carries many notifications of one event to
    one channel at once; each of them is `grouped` and points to it (notify/grouping.py).
    """

    incident = models.ForeignKey(
        Incident, null=True, blank=True, on_delete=models.CASCADE, related_name="notifications"
    )
    channel = models.ForeignKey(
        Channel, null=True, blank=True, on_delete=models.SET_NULL, related_name="notifications"
    )
    # A channel from SILLO_NOTIFY has no row: its URL travels with the notification.
    env_url = models.TextField(blank=True)
    channel_label = models.CharField(max_length=200)
    event = models.CharField(max_length=16)
    payload = models.JSONField()
    status = models.CharField(
        max_length=16, choices=NotificationStatus.choices, default=NotificationStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField()
    claimed_by = models.CharField(max_length=64, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    answer = models.TextField(blank=True, help_text="what the channel answered")
    group = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="members",
        help_text="the summary that carried this notification",
    )  # fmt: skip
    size = models.PositiveIntegerField(default=0, help_text="notifications this summary carries")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The deliverer's pick-up of pending notifications.
            models.Index(
                fields=["next_attempt_at"],
                name="notification_pending_idx",
                condition=Q(status="pending"),
            ),
            # Lease expiry of claims whose deliverer died.
            models.Index(
                fields=["claimed_at"],
                name="notification_sending_idx",
                condition=Q(status="sending"),
            ),
            # The summaries of the last interval, which hold back their channel's event.
            models.Index(
                fields=["created_at"], name="notification_summary_idx", condition=Q(size__gt=0)
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=NotificationStatus.values), name="notification_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.channel_label} ({self.status})"

    @property
    def shown_status(self) -> str:
        """The status as the delivery log words it: a pending one that failed before is
        retrying."""
        if self.status == NotificationStatus.PENDING and self.attempts:
            return "retrying"
        return self.status


class RunCounter(models.Model):
    """Monotonic run counters and histogram buckets per schedule code, for /metrics.

    Keyed by code, not by schedule: deleting a schedule or pruning its runs
    never lowers a counter.
    """

    schedule_code = models.CharField(max_length=200)
    name = models.CharField(max_length=40)
    value = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["schedule_code", "name"], name="run_counter_unique")
        ]

    def __str__(self) -> str:
        return f"{self.schedule_code} {self.name}={self.value:g}"


class CounterTotal(models.Model):
    """The run counters' sums by name, a few rows per writer, so that /metrics sums
    the schedules past its label limit without reading every counter
    (schedules/counter_totals.py). The base shard ("") holds the folded ones.
    """

    shard = models.CharField(max_length=100)
    name = models.CharField(max_length=40)
    value = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["shard", "name"], name="counter_total_unique")
        ]

    def __str__(self) -> str:
        return f"{self.shard or 'base'} {self.name}={self.value:g}"
