"""Delivering the outbox for real: a local HTTP receiver, a local SMTP server, apprise."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from datetime import timedelta

import pytest
from aiosmtpd.controller import Controller
from asgiref.sync import sync_to_async

from schedules.models import Channel, Notification
from schedules.notify import outbox, payload
from schedules.scheduler.alerting import Alerting
from tests.factories import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def write(event: str = "failed") -> list[Notification]:
    document = payload.build(
        event=event,
        schedule_code="nightly",
        task_name="test.fail",
        schedule_id=None,
        run=None,
        at=FakeClock().now(),
    )
    notes = outbox.notifications(
        incident=None, event=event, payload=document, now=FakeClock().now(),
        targets=outbox.targets(),
    )  # fmt: skip
    return Notification.objects.bulk_create(notes)


async def deliver_all(alerting: Alerting) -> None:
    await alerting.step()
    await alerting.wait_idle()


async def test_a_webhook_gets_the_payload_signed_and_is_marked_sent(
    transactional_db, receiver, clock
) -> None:
    await sync_to_async(Channel.objects.create)(
        name="hook", kind="webhook", url=f"{receiver.url}/in", secret="s3cret"
    )
    (note,) = await sync_to_async(write)()
    alerting = Alerting(instance_id="a", clock=clock)
    await deliver_all(alerting)
    (request,) = receiver.requests
    expected = hmac.new(b"s3cret", request["body"], hashlib.sha256).hexdigest()
    assert request["headers"]["X-Sillo-Signature"] == f"sha256={expected}"
    assert request["headers"]["X-Sillo-Delivery"] == str(note.pk)
    assert request["json"]["event"] == "failed" and request["json"]["schedule"] == "nightly"
    note = await sync_to_async(Notification.objects.get)(pk=note.pk)
    assert (note.status, note.attempts, note.answer) == ("sent", 1, "HTTP 200 thanks")
    await alerting.shutdown()


async def test_without_a_secret_there_is_no_signature(transactional_db, receiver, clock) -> None:
    await sync_to_async(Channel.objects.create)(name="hook", kind="webhook", url=receiver.url)
    await sync_to_async(write)()
    alerting = Alerting(instance_id="a", clock=clock)
    await deliver_all(alerting)
    assert "X-Sillo-Signature" not in receiver.requests[0]["headers"]
    await alerting.shutdown()


async def test_a_refusing_receiver_is_retried_with_backoff_then_failed(
    transactional_db, receiver, clock, settings
) -> None:
    settings.SILLO_NOTIFY_MAX_ATTEMPTS, settings.SILLO_NOTIFY_RETRY_DELAY = 3, 10
    receiver.status = 500
    await sync_to_async(Channel.objects.create)(name="hook", kind="webhook", url=receiver.url)
    (note,) = await sync_to_async(write)()
    alerting = Alerting(instance_id="a", clock=clock)
    reload = sync_to_async(lambda: Notification.objects.get(pk=note.pk))
    await deliver_all(alerting)
    note = await reload()
    assert (note.status, note.attempts, note.last_error) == ("pending", 1, "HTTP 500 nope")
    assert note.next_attempt_at == clock.now() + timedelta(seconds=10)
    clock.advance(9)
    await deliver_all(alerting)
    assert len(receiver.requests) == 1  # not before its time
    clock.advance(1)
    await deliver_all(alerting)
    note = await reload()
    assert note.next_attempt_at == clock.now() + timedelta(seconds=20)
    clock.advance(20)
    await deliver_all(alerting)
    note = await reload()
    assert (note.status, note.attempts, len(receiver.requests)) == ("failed", 3, 3)
    await alerting.shutdown()


async def test_two_deliverers_send_each_notification_once(
    transactional_db, receiver, clock, settings
) -> None:
    settings.SILLO_NOTIFY_GROUP_AT = 0  # each on its own (summaries: test_grouping.py)
    await sync_to_async(Channel.objects.create)(name="hook", kind="webhook", url=receiver.url)
    for _ in range(10):
        await sync_to_async(write)()
    first, second = Alerting(instance_id="a", clock=clock), Alerting(instance_id="b", clock=clock)
    for _ in range(4):
        await asyncio.gather(deliver_all(first), deliver_all(second))
    ids = [r["headers"]["X-Sillo-Delivery"] for r in receiver.requests]
    assert len(ids) == 10 and len(set(ids)) == 10
    await first.shutdown()
    await second.shutdown()


async def test_a_claim_whose_deliverer_died_is_retried_after_the_lease(
    transactional_db, receiver, clock, settings
) -> None:
    settings.SILLO_NOTIFY_LEASE = 60
    await sync_to_async(Channel.objects.create)(name="hook", kind="webhook", url=receiver.url)
    await sync_to_async(write)()
    claimed = await sync_to_async(outbox.claim)(now=clock.now(), instance_id="dead", limit=10)
    assert len(claimed) == 1
    alerting = Alerting(instance_id="a", clock=clock)
    await deliver_all(alerting)
    assert receiver.requests == []
    clock.advance(61)
    await deliver_all(alerting)
    assert len(receiver.requests) == 1
    await alerting.shutdown()


class Inbox:
    def __init__(self) -> None:
        self.messages: list = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        self.messages.append(envelope)
        return "250 OK"


async def test_email_goes_through_django_mailers_to_an_smtp_server(
    transactional_db, clock, settings, unused_tcp_port
) -> None:
    inbox = Inbox()
    smtp = Controller(inbox, hostname="127.0.0.1", port=unused_tcp_port)
    smtp.start()
    try:
        settings.MAILERS = {
            "default": {"OPTIONS": {"host": "127.0.0.1", "port": unused_tcp_port, "timeout": 5}}
        }
        await sync_to_async(Channel.objects.create)(
            name="ops", kind="email", url="mailto:ops@example.com,oncall@example.com"
        )
        (note,) = await sync_to_async(write)()
        alerting = Alerting(instance_id="a", clock=clock)
        await deliver_all(alerting)
        (envelope,) = inbox.messages
        assert sorted(envelope.rcpt_tos) == ["oncall@example.com", "ops@example.com"]
        text = envelope.content.decode()
        assert "Subject: [sillo] nightly is failing" in text
        assert "Task: test.fail" in text
        note = await sync_to_async(Notification.objects.get)(pk=note.pk)
        assert note.status == "sent"
        await alerting.shutdown()
    finally:
        smtp.stop()


async def test_apprise_urls_go_through_apprise(transactional_db, receiver, clock) -> None:
    url = f"json://127.0.0.1:{receiver.port}/chat"
    await sync_to_async(Channel.objects.create)(name="chat", kind="apprise", url=url)
    await sync_to_async(write)("recovered")
    alerting = Alerting(instance_id="a", clock=clock)
    await deliver_all(alerting)
    (request,) = receiver.requests
    assert request["path"] == "/chat"
    assert request["json"]["title"] == "nightly recovered"
    assert request["json"]["type"] == "success"
    await alerting.shutdown()


async def test_environment_channels_get_notifications_too(
    transactional_db, receiver, clock, settings
) -> None:
    settings.SILLO_NOTIFY = [f"{receiver.url}/env#secret=k3y"]
    (note,) = await sync_to_async(write)()
    assert note.channel_id is None and note.channel_label.endswith("(SILLO_NOTIFY)")
    alerting = Alerting(instance_id="a", clock=clock)
    await deliver_all(alerting)
    (request,) = receiver.requests
    expected = hmac.new(b"k3y", request["body"], hashlib.sha256).hexdigest()
    assert request["headers"]["X-Sillo-Signature"] == f"sha256={expected}"
    await alerting.shutdown()


async def test_a_notification_of_a_deleted_channel_fails_at_once(
    transactional_db, receiver, clock
) -> None:
    channel = await sync_to_async(Channel.objects.create)(
        name="hook", kind="webhook", url=receiver.url
    )
    (note,) = await sync_to_async(write)()
    await sync_to_async(channel.delete)()
    alerting = Alerting(instance_id="a", clock=clock)
    await deliver_all(alerting)
    note = await sync_to_async(Notification.objects.get)(pk=note.pk)
    assert (note.status, note.attempts, note.last_error) == ("failed", 1, "the channel was deleted")
    assert note.channel_label == "hook"
    await alerting.shutdown()
