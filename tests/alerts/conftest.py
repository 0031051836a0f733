"""Alert fixtures: a webhook channel row, and helpers to drive the scheduler."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from schedules.models import Channel, Incident, IncidentEvent, Notification
from tests.scheduler.conftest import clock, scheduler  # noqa: F401  (the scheduler's fixtures)

from .receiver import Receiver


@pytest.fixture
def receiver():
    """A real local HTTP server that records what webhooks POST to it."""
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def channel(transactional_db) -> Channel:
    return Channel.objects.create(
        name="ops hook", kind="webhook", url="http://127.0.0.1:9/hook", secret="s3cret"
    )


async def drive(engine, fake_clock, *, seconds: float, passes: int = 1) -> None:
    """Move the clock, then run passes until the runs they started are recorded."""
    for _ in range(passes):
        fake_clock.advance(seconds)
        await engine.run_pass()
        await engine.wait_idle()


@sync_to_async
def incidents(code: str) -> list[Incident]:
    return list(Incident.objects.filter(schedule_code=code).order_by("pk"))


@sync_to_async
def timeline(incident: Incident) -> list[tuple[str, str]]:
    return list(
        IncidentEvent.objects.filter(incident=incident).order_by("pk").values_list("event", "text")
    )


@sync_to_async
def notifications(code: str | None = None) -> list[Notification]:
    rows = Notification.objects.order_by("pk")
    if code is not None:
        rows = rows.filter(payload__schedule=code)
    return list(rows)
