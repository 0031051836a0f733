"""End-to-end alerts: real runscheduler processes, a local webhook receiver and SMTP server.

These wait real seconds: exactly one notification per incident event with two
schedulers delivering, retries while the receiver is down, the late check
after a SIGKILL, and the circuit breaker.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import signal
import time
from datetime import UTC, datetime

import pytest
from aiosmtpd.controller import Controller

from tests.alerts.receiver import Receiver

from .conftest import free_port

pytestmark = pytest.mark.slow
SECRET = "e2e-secret"
FAST = {
    "SILLO_ALERT_CHECK_INTERVAL": "0.5",
    "SILLO_NOTIFY_POLL": "0.2",
    "SILLO_NOTIFY_RETRY_DELAY": "0.5",
}


def wait_until(predicate, timeout: float = 30.0, what: str = "", site=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}\n{site.logs() if site else ''}")


def events(receiver: Receiver, schedule: str) -> list[str]:
    return [r["json"]["event"] for r in receiver.requests if r["json"]["schedule"] == schedule]


def parse(value) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def test_one_notification_per_event_with_two_schedulers_retried_until_the_receiver_is_up(
    site, tmp_path
) -> None:
    port = free_port()
    site.env.update(
        FAST,
        SILLO_NOTIFY=f"http://127.0.0.1:{port}/hook#secret={SECRET}",
        SILLO_BASE_URL="https://ops.example.com",
    )
    flag = tmp_path / "healthy"
    site.schedules(
        [
            (
                "flaky",
                "test.until_file",
                {"kind": "interval", "every": 2},
                {"kwargs": {"path": str(flag)}, "max_attempts": 3, "retry_delay": 0.2},
            ),
            ("tick", "test.echo", {"kind": "interval", "every": 1}, {}),
        ]
    )
    first, second = site.start(), site.start()
    # The receiver is down: the failing incident opens and its notification waits.
    site.wait_for("SELECT 1 FROM schedules_incident WHERE schedule_code='flaky' AND kind='failing'")
    site.wait_for("SELECT 1 FROM schedules_notification WHERE status='pending' AND attempts >= 2")
    down_since = datetime.now(UTC)
    time.sleep(1.5)
    receiver = Receiver(port=port)
    try:
        wait_until(lambda: events(receiver, "flaky") == ["failed"], what="failed", site=site)
        flag.write_text("ok")
        wait_until(lambda: "recovered" in events(receiver, "flaky"), what="recovered", site=site)
        time.sleep(2)  # more slots succeed; nothing else may arrive
        assert events(receiver, "flaky") == ["failed", "recovered"]
        failed = receiver.requests[0]
        expected = hmac.new(SECRET.encode(), failed["body"], hashlib.sha256).hexdigest()
        assert failed["headers"]["X-Sillo-Signature"] == f"sha256={expected}"
        document = json.loads(failed["body"])
        assert document["task"] == "test.until_file"
        assert document["run"]["attempt"] == 3 and document["run"]["status"] == "failed"
        assert "is missing" in document["run"]["error"]
        assert document["url"].startswith("https://ops.example.com/schedules/")
        datetime.fromisoformat(document["at"])
        # Three failed attempts: one incident, one `failed` notification.
        assert site.query(
            "SELECT count(*) FROM schedules_incident WHERE schedule_code='flaky'"
        ) == [(1,)]
        assert site.query(
            "SELECT status, attempts > 1 FROM schedules_notification WHERE event='failed'"
        ) == [("sent", 1)]
    finally:
        receiver.close()
    assert site.stop(first) == 0 and site.stop(second) == 0
    # Scheduling went on while deliveries waited for the receiver.
    ticks = site.query(
        "SELECT slot, started_at FROM schedules_run WHERE schedule_code='tick' "
        "AND reason='scheduled' AND status='succeeded' ORDER BY slot"
    )
    during = [(parse(s), parse(t)) for t, s in ticks if parse(t) >= down_since]
    assert len(during) >= 3
    assert max((started - slot).total_seconds() for slot, started in during) < 1.0


class Inbox:
    def __init__(self) -> None:
        self.messages: list = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        self.messages.append(envelope)
        return "250 OK"


def test_a_failure_is_emailed_through_a_real_smtp_server(site) -> None:
    inbox = Inbox()
    port = free_port()
    smtp = Controller(inbox, hostname="127.0.0.1", port=port)
    smtp.start()
    try:
        site.env.update(
            FAST,
            SILLO_NOTIFY="mailto:oncall@example.com",
            DJANGO_EMAIL_HOST="127.0.0.1",
            DJANGO_EMAIL_PORT=str(port),
        )
        site.schedule("mailer", "test.fail", {"kind": "interval", "every": 60})
        site.python(
            "from schedules.models import Schedule; from django.utils import timezone\n"
            "Schedule.objects.filter(code='mailer').update(next_run_at=timezone.now())"
        )
        process = site.start()
        wait_until(lambda: inbox.messages, what="an email", site=site)
        (envelope,) = inbox.messages
        assert envelope.rcpt_tos == ["oncall@example.com"]
        text = envelope.content.decode()
        assert "Subject: [sillo] mailer is failing" in text and "RuntimeError: boom" in text
        site.wait_for("SELECT 1 FROM schedules_notification WHERE status='sent'")
        assert site.stop(process) == 0
    finally:
        smtp.stop()


HEARTBEAT_RUNS_ON = (
    "SELECT count(*) FILTER (WHERE r.status = 'succeeded'), "
    "count(*) FILTER (WHERE r.status IN ('running', 'queued')) "
    "FROM schedules_run r JOIN schedules_schedulerinstance i ON r.scheduler = i.id "
    "WHERE r.schedule_code = 'heartbeat' AND i.pid = ?"
)
# No open incident, nothing left to notify, no run left by an earlier (killed) scheduler.
SETTLED = (
    "SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM schedules_incident WHERE closed_at IS NULL) "
    "AND NOT EXISTS (SELECT 1 FROM schedules_notification WHERE status IN ('pending', 'sending')) "
    "AND NOT EXISTS (SELECT 1 FROM schedules_run r JOIN schedules_schedulerinstance i "
    "ON r.scheduler = i.id WHERE r.status IN ('running', 'queued') AND i.pid <> ?)"
)


def heartbeat_runs(site, pid: int) -> tuple[int, int]:
    """The heartbeat's runs claimed by the scheduler `pid`: (succeeded, still running)."""
    ((succeeded, busy),) = site.query(HEARTBEAT_RUNS_ON, pid)
    return succeeded, busy


def kill_between_runs(site, receiver) -> tuple[list[str], datetime]:
    """Start the only scheduler and SIGKILL it while it holds no run of its own.

    Returns the events notified before the kill and its time. The kill follows a
    fresh success, so the next slot is most of an interval away; a kill that still
    lands mid-run (a loaded machine) leaves a run the next scheduler records
    `interrupted`, a real failure with its own `failed` and `recovered`: then that
    next scheduler settles it and is killed in turn.
    """
    for _ in range(3):
        victim = site.start()

        def idle_after(seen: int, pid: int = victim.pid) -> bool:
            succeeded, busy = heartbeat_runs(site, pid)
            return succeeded > seen and not busy

        wait_until(lambda: idle_after(0), what="a success", site=site)
        # A slow start may already have made the first slot late: wait until it is over.
        site.wait_for(SETTLED, victim.pid)
        seen, _ = heartbeat_runs(site, victim.pid)
        wait_until(lambda: idle_after(seen), what="a fresh success", site=site)  # noqa: B023
        before = events(receiver, "heartbeat")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        killed_at = datetime.now(UTC)
        if not heartbeat_runs(site, victim.pid)[1]:  # dead: nothing it owns changes any more
            return before, killed_at
    raise AssertionError(f"no kill landed between runs\n{site.logs()}")


def test_the_late_check_fires_when_the_only_scheduler_is_killed_and_another_starts(
    site,
) -> None:
    receiver = Receiver()
    try:
        site.env.update(FAST, SILLO_NOTIFY=f"{receiver.url}/hook")
        site.schedule("heartbeat", "test.echo", {"kind": "interval", "every": 2}, misfire_grace=1)
        before, killed_at = kill_between_runs(site, receiver)
        time.sleep(4)  # slots pass their grace with nobody alive
        successor = site.start()
        rows = site.wait_for(
            "SELECT summary, opened_at, id FROM schedules_incident "
            "WHERE schedule_code='heartbeat' AND kind='late' AND closed_at IS NULL"
        )
        ((summary, opened_at, incident_id),) = rows
        assert "grace" in summary and parse(opened_at) > killed_at
        wait_until(
            lambda: events(receiver, "heartbeat") == [*before, "late"], what="late", site=site
        )
        # The successor fires the next slot on time: the late incident closes, notified once.
        site.wait_for(
            "SELECT 1 FROM schedules_incident WHERE id=? AND closed_at IS NOT NULL", incident_id
        )
        time.sleep(0.5)
        assert events(receiver, "heartbeat") == [*before, "late"]
        assert site.stop(successor) == 0
    finally:
        receiver.close()


def test_a_scheduler_back_from_a_day_down_sends_one_summary_of_its_late_schedules(
    site,
) -> None:
    receiver = Receiver()
    try:
        site.env.update(FAST, SILLO_NOTIFY=f"{receiver.url}/hook", SILLO_NOTIFY_GROUP_INTERVAL="2")
        every_minute = {"kind": "interval", "every": 60}
        site.schedules(
            [(f"behind{i}", "test.echo", every_minute, {"misfire_grace": 5}) for i in range(40)]
        )
        site.python(  # as after a day with no scheduler running
            "from datetime import timedelta\n"
            "from django.utils import timezone\n"
            "from schedules.models import Schedule\n"
            "Schedule.objects.filter(code__startswith='behind')"
            ".update(next_run_at=timezone.now() - timedelta(days=1))\n"
        )
        scheduler = site.start()
        site.wait_for(
            "SELECT 1 WHERE (SELECT COUNT(*) FROM schedules_incident "
            "WHERE kind='late' AND closed_at IS NULL) = 40"
        )
        # Delivered, and nothing left to deliver: no further message can follow.
        site.wait_for(
            "SELECT 1 WHERE EXISTS (SELECT 1 FROM schedules_notification "
            "WHERE size > 0 AND status = 'sent') AND NOT EXISTS (SELECT 1 FROM "
            "schedules_notification WHERE status IN ('pending', 'sending'))"
        )
        late = [r["json"] for r in receiver.requests if r["json"]["event"] == "late"]
        assert len(late) == 1, [document["text"] for document in late]
        assert late[0]["group"]["size"] == 40
        assert late[0]["text"].splitlines()[-1] == "and 20 more"
        grouped = site.query(
            "SELECT COUNT(*), COUNT(DISTINCT group_id) FROM schedules_notification "
            "WHERE status='grouped'"
        )
        assert grouped == [(40, 1)]
        assert site.stop(scheduler) == 0
    finally:
        receiver.close()


def test_the_circuit_breaker_pauses_after_n_failures(site) -> None:
    receiver = Receiver()
    try:
        site.env.update(FAST, SILLO_NOTIFY=f"{receiver.url}/hook")
        site.schedule(
            "breaker", "test.fail", {"kind": "interval", "every": 1}, alert={"pause_after": 3}
        )
        process = site.start()
        (reason,) = site.wait_for(
            "SELECT pause_reason FROM schedules_schedule WHERE code='breaker' AND status='paused'"
        )[0]
        assert reason == "auto-paused after 3 final failures in a row"
        wait_until(
            lambda: sorted(events(receiver, "breaker")) == ["auto_paused", "failed"],
            what="auto_paused",
            site=site,
        )
        time.sleep(2)  # paused: no further slot fires
        # No slot fires once paused (a slow start may have claimed a burst of slots
        # before the third failure was recorded: those still end, as failures).
        assert site.query(
            "SELECT count(*) FROM schedules_run r JOIN schedules_incident i "
            "ON i.schedule_code = r.schedule_code AND i.kind = 'auto_paused' "
            "WHERE r.schedule_code = 'breaker' AND r.queued_at > i.opened_at"
        ) == [(0,)]
        assert site.query(
            "SELECT count(*) >= 3 FROM schedules_run WHERE schedule_code='breaker' "
            "AND status = 'failed'"
        ) == [(1,)]
        assert site.query(
            "SELECT count(*) FROM schedules_incident WHERE kind='auto_paused' AND closed_at IS NULL"
        ) == [(1,)]
        assert site.stop(process) == 0
    finally:
        receiver.close()
