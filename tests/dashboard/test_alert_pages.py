"""The alerts pages, one role at a time: incidents, a schedule's rules, channels, tests."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from schedules.alerts.live import publish_count
from schedules.models import Channel, Incident, IncidentEvent, Notification
from schedules.web.incident_consumer import IncidentCountConsumer
from tests.alerts.receiver import Receiver

from .conftest import member

SECRET_URL = "https://hooks.example.com/services/T000/B000/XXXXSECRETXXXX"


@pytest.fixture
def incident(schedule) -> Incident:
    incident = Incident.objects.create(
        schedule=schedule,
        schedule_code=schedule.code,
        task_name=schedule.task_name,
        kind="failing",
        summary="run 7 failed: 1 final failure in a row",
        opened_at=timezone.now(),
    )
    IncidentEvent.objects.create(
        incident=incident, at=incident.opened_at, event="failed", text=incident.summary
    )
    Notification.objects.create(
        incident=incident,
        channel_label="ops hook",
        event="failed",
        payload={},
        status="pending",
        attempts=1,
        last_error="HTTP 503 down",
        created_at=timezone.now(),
        next_attempt_at=timezone.now(),
    )
    return incident


@pytest.fixture
def secret_channel(db) -> Channel:
    return Channel.objects.create(
        name="team slack", kind="webhook", url=SECRET_URL, secret="hmac-secret-value"
    )


def test_the_incidents_page_shows_open_incidents_and_the_delivery_log(
    client, viewer, incident
) -> None:
    client.force_login(viewer)
    response = client.get("/incidents/")
    assert response.status_code == 200
    text = response.content.decode()
    assert "run 7 failed" in text and "nightly" in text
    assert "retrying" in text and "HTTP 503 down" in text
    assert 'data-testid="incident-count"' in text and ">1</span>" in text


def test_an_incident_page_shows_its_timeline(client, viewer, incident) -> None:
    client.force_login(viewer)
    response = client.get(f"/incidents/{incident.pk}/")
    assert response.status_code == 200
    assert "1 final failure in a row" in response.content.decode()


def test_the_delivery_log_shows_a_summary_and_what_it_carried(client, viewer, incident) -> None:
    member = incident.notifications.get()
    summary = Notification.objects.create(
        channel_label="ops hook",
        event="failed",
        payload={},
        status="sent",
        attempts=1,
        size=12,
        answer="HTTP 200 thanks",
        created_at=timezone.now(),
        next_attempt_at=timezone.now(),
    )
    Notification.objects.filter(pk=member.pk).update(status="grouped", group=summary)
    client.force_login(viewer)

    incidents_page = client.get("/incidents/").content.decode()
    assert "summary of 12" in incidents_page
    assert f"in summary #{summary.pk} (sent)" in incidents_page
    rows = incidents_page.split('data-testid="delivery-summary"')[1].split("</table>")[0]
    assert "<th" in rows and "In summaries" in rows
    incident_page = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert f"in summary #{summary.pk} (sent)" in incident_page
    Notification.objects.filter(pk=summary.pk).update(status="pending")  # refused once
    incident_page = client.get(f"/incidents/{incident.pk}/").content.decode()
    assert f"in summary #{summary.pk} (retrying)" in incident_page


def test_incidents_need_the_view_permission(client, stranger, incident) -> None:
    client.force_login(stranger)
    assert client.get("/incidents/").status_code == 403
    assert client.get(f"/incidents/{incident.pk}/").status_code == 403


def test_viewers_see_the_rules_on_the_schedule_page_but_cannot_edit_them(
    client, viewer, schedule
) -> None:
    client.force_login(viewer)
    text = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert 'data-testid="effective-rules"' in text and "after_failures" in text
    assert "Edit alert rules" not in text and "Send test notification" not in text
    assert client.get(f"/schedules/{schedule.pk}/alerts/").status_code == 403
    assert client.post(f"/schedules/{schedule.pk}/alerts/", {"pause_after": 3}).status_code == 403
    assert client.post(f"/schedules/{schedule.pk}/alerts/test/").status_code == 403


def test_editors_set_a_schedules_rules(client, editor, schedule) -> None:
    client.force_login(editor)
    response = client.post(
        f"/schedules/{schedule.pk}/alerts/",
        {
            "pause_after": "3",
            "repeat_every": "3600",
            "notify_override": "on",
            "notify": ["failed", "stuck"],
            "notify_recovery": "no",
        },
    )
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.alert == {
        "pause_after": 3,
        "repeat_every": 3600.0,
        "notify": ["failed", "stuck"],
        "notify_recovery": False,
    }
    text = client.get(f"/schedules/{schedule.pk}/").content.decode()
    assert 'data-rule="pause_after">3<' in text


def test_bad_rules_get_field_errors(client, editor, schedule) -> None:
    client.force_login(editor)
    response = client.post(f"/schedules/{schedule.pk}/alerts/", {"after_failures": "0"})
    assert response.status_code == 422
    assert "after_failures must be a whole number of at least 1" in response.content.decode()
    schedule.refresh_from_db()
    assert schedule.alert == {}


def test_viewers_see_channel_names_but_never_their_urls(client, viewer, secret_channel) -> None:
    client.force_login(viewer)
    text = client.get("/channels/").content.decode()
    assert "team slack" in text
    assert "hooks.example.com" not in text and "XXXXSECRET" not in text
    assert "hmac-secret-value" not in text and "Add a channel" not in text
    assert client.post("/channels/", {"name": "x", "url": "https://a.b/c"}).status_code == 403
    assert client.post(f"/channels/{secret_channel.pk}/test/").status_code == 403
    assert client.post(f"/channels/{secret_channel.pk}/delete/").status_code == 403


def test_editors_see_channel_urls_masked_after_saving(client, editor, secret_channel) -> None:
    client.force_login(editor)
    text = client.get("/channels/").content.decode()
    assert "https://hooks.example.com/•••" in text
    assert "XXXXSECRET" not in text and "hmac-secret-value" not in text


def test_editors_add_channels_and_bad_urls_get_a_clear_error(client, editor) -> None:
    client.force_login(editor)
    response = client.post("/channels/", {"name": "pager", "url": "nosuchscheme://x/y"})
    assert response.status_code == 422
    assert "apprise does not understand" in response.content.decode()
    response = client.post("/channels/", {"name": "mail", "url": "mailto:ops@example.com"})
    assert response.status_code == 302
    assert Channel.objects.get(name="mail").kind == "email"
    response = client.post("/channels/", {"name": "ntfy", "url": "ntfy://ntfy.sh/my-topic"})
    assert Channel.objects.get(name="ntfy").kind == "apprise"


def test_send_test_shows_each_channels_answer(client, editor, schedule, settings) -> None:
    receiver = Receiver()
    try:
        Channel.objects.create(name="local", kind="webhook", url=f"{receiver.url}/hook")
        settings.SILLO_NOTIFY = ["http://127.0.0.1:9/closed"]
        client.force_login(editor)
        response = client.post(f"/schedules/{schedule.pk}/alerts/test/")
        text = response.content.decode()
        assert response.status_code == 200
        assert "<strong>local</strong>: sent — HTTP 200 thanks" in text
        assert "(SILLO_NOTIFY)</strong>: failed — ConnectionError" in text
        (request,) = receiver.requests
        assert request["json"]["event"] == "test" and request["json"]["schedule"] == "nightly"
    finally:
        receiver.close()


@pytest.mark.django_db(transaction=True)
async def test_the_header_count_arrives_on_connect_and_on_each_change() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    comm = WebsocketCommunicator(IncidentCountConsumer.as_asgi(), "/ws/incidents/")
    comm.scope["user"] = viewer
    connected, _ = await comm.connect()
    assert connected
    assert ">0</span>" in await comm.receive_from()
    await publish_count(3)
    assert ">3</span>" in await comm.receive_from()
    await comm.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_the_header_count_refuses_anonymous_users() -> None:
    comm = WebsocketCommunicator(IncidentCountConsumer.as_asgi(), "/ws/incidents/")
    comm.scope["user"] = AnonymousUser()
    assert await comm.connect() == (False, 4403)
    await comm.disconnect()
