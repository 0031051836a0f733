"""The run page: every field of a run, escaped, and its output live while it runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from schedules.events import publish_output, publish_run
from schedules.models import Run, RunOutput, RunStatus
from schedules.web.consumers import RunEventsConsumer
from tests.factories import every, make_schedule

from .conftest import member


def a_run(schedule, **fields) -> Run:
    defaults = {
        "schedule": schedule, "schedule_code": schedule.code, "task_name": schedule.task_name,
        "reason": "scheduled", "status": RunStatus.SUCCEEDED,
    }  # fmt: skip
    return Run.objects.create(**{**defaults, **fields})


@pytest.mark.django_db
class TestThePage:
    def test_it_needs_the_view_permission(self, client, stranger, schedule) -> None:
        run = a_run(schedule)
        client.force_login(stranger)
        assert client.get(f"/runs/{run.pk}/").status_code == 403

    def test_anonymous_users_go_to_the_login(self, client, schedule) -> None:
        run = a_run(schedule)
        response = client.get(f"/runs/{run.pk}/")
        assert response.status_code == 302 and "/login" in response["Location"]

    def test_it_says_who_asked_for_the_run(self, client, viewer, editor, schedule) -> None:
        from schedules import services
        from schedules.alerts.models import Incident, IncidentEvent

        scheduled = a_run(schedule)
        from_cli = services.schedule_run_now(schedule=schedule, by="cli:ops", via="cli")
        from_web = services.schedule_run_now(schedule=schedule, by=editor, via="web")
        probe = a_run(schedule, reason="manual")
        incident = Incident.objects.create(
            schedule=schedule, schedule_code=schedule.code, task_name=schedule.task_name,
            kind="auto_paused", summary="paused", opened_at=timezone.now(),
        )  # fmt: skip
        IncidentEvent.objects.create(
            incident=incident, event="probe", run_id=probe.pk, at=timezone.now()
        )
        client.force_login(viewer)

        def asked(run: Run) -> str:
            page = client.get(f"/runs/{run.pk}/").content.decode()
            return page.split("<dt>Asked by</dt><dd>")[1].split("</dd>")[0]

        assert asked(scheduled) == "the schedule"
        assert asked(from_cli) == "cli:ops"
        assert asked(from_web) == editor.get_username()
        assert asked(probe) == "a half-open probe (alerts)"

    def test_an_unknown_or_absurd_run_is_404(self, client, viewer) -> None:
        client.force_login(viewer)
        assert client.get("/runs/999999/").status_code == 404
        assert client.get(f"/runs/{2**64}/").status_code == 404

    def test_it_shows_every_field_of_a_finished_run(self, client, viewer, schedule) -> None:
        slot = timezone.now() - timedelta(minutes=5)
        run = a_run(
            schedule, slot=slot, queued_at=slot, started_at=slot + timedelta(seconds=2),
            finished_at=slot + timedelta(seconds=3.5), kwargs={"region": "eu"},
            result={"rows": 3, "ok": True}, scheduler="sched-1",
        )  # fmt: skip
        RunOutput.objects.create(run=run, text="hello\nINFO app: done\n", total=21)
        client.force_login(viewer)
        html = client.get(f"/runs/{run.pk}/").content.decode()
        assert f"Run #{run.pk} of" in html
        assert 'class="badge s-succeeded">succeeded' in html
        assert "Scheduled" in html
        assert "(2.00 s after its slot)" in html
        assert "1.50 s" in html  # duration
        assert "&quot;region&quot;: &quot;eu&quot;" in html
        assert "&quot;rows&quot;: 3" in html
        assert "hello\nINFO app: done\n</pre>" in html
        assert "sched-1" in html
        assert "view=run" not in html  # a finished run streams nothing
        assert f'href="/schedules/{schedule.pk}/"' in html

    def test_error_traceback_and_output_are_escaped(self, client, viewer, schedule) -> None:
        run = a_run(
            schedule, status=RunStatus.FAILED, error="RuntimeError: <b>bad</b>",
            traceback="Traceback <script>alert(1)</script>",
        )  # fmt: skip
        RunOutput.objects.create(run=run, text="<img src=x onerror=alert(1)>", total=28)
        client.force_login(viewer)
        html = client.get(f"/runs/{run.pk}/").content.decode()
        assert "RuntimeError: &lt;b&gt;bad&lt;/b&gt;" in html
        assert "Traceback &lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html
        assert "<script>alert" not in html and "<img src=x" not in html

    def test_a_truncated_result_and_cut_output_say_so(self, client, viewer, schedule) -> None:
        run = a_run(schedule, result={"truncated": True, "preview": '{"big": "aaaa'})
        RunOutput.objects.create(run=run, text="head\n… [5,000 characters cut] …\ntail", total=5010,
                                 cut=5000)  # fmt: skip
        client.force_login(viewer)
        html = client.get(f"/runs/{run.pk}/").content.decode()
        assert "The result was longer than the limit: its first 13 characters" in html
        assert "in the middle were cut" in html

    def test_a_run_without_output_says_so(self, client, viewer, schedule) -> None:
        run = a_run(schedule)
        client.force_login(viewer)
        assert b"The run printed and logged nothing" in client.get(f"/runs/{run.pk}/").content

    def test_attempts_link_to_each_other_and_the_parent(self, client, viewer, schedule) -> None:
        first = a_run(schedule, status=RunStatus.FAILED, error="boom")
        second = a_run(schedule, status=RunStatus.FAILED, error="boom", reason="retry",
                       attempt=2, parent=first)  # fmt: skip
        third = a_run(schedule, reason="retry", attempt=3, parent=second)
        client.force_login(viewer)
        html = client.get(f"/runs/{second.pk}/").content.decode()
        assert f'<a href="/runs/{first.pk}/">#{first.pk}</a>' in html
        assert f'<a href="/runs/{third.pk}/">#{third.pk}</a>' in html
        assert f"<strong>#{second.pk}</strong>" in html
        assert f'after <a href="/runs/{first.pk}/">run #{first.pk}</a>' in html

    def test_a_manual_run_names_who_asked(self, client, viewer, operator, schedule) -> None:
        run = a_run(schedule, reason="manual", requested_by=operator)
        client.force_login(viewer)
        html = client.get(f"/runs/{run.pk}/").content.decode()
        assert "Manual" in html and "operator" in html

    def test_a_running_run_connects_its_stream_after_what_it_shows(
        self, client, viewer, schedule
    ) -> None:
        run = a_run(schedule, status=RunStatus.RUNNING, started_at=timezone.now())
        RunOutput.objects.create(run=run, text="so far\n", total=7)
        client.force_login(viewer)
        html = client.get(f"/runs/{run.pk}/").content.decode()
        assert f"?view=run&amp;run={run.pk}&amp;schedule={schedule.pk}&amp;offset=7" in html
        assert 'id="output-live"' in html

    def test_the_page_costs_a_fixed_number_of_queries(
        self, client, viewer, schedule, django_assert_max_num_queries
    ) -> None:
        run = a_run(schedule)
        client.force_login(viewer)
        with django_assert_max_num_queries(12):
            assert client.get(f"/runs/{run.pk}/").status_code == 200


# ---------------------------------------------------------------- live


def communicator(path: str, user) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(RunEventsConsumer.as_asgi(), path)
    comm.scope["user"] = user
    return comm


@pytest.mark.django_db(transaction=True)
async def test_output_streams_after_what_the_page_shows_and_the_page_turns_final() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    run = await sync_to_async(a_run)(schedule, status=RunStatus.RUNNING, started_at=timezone.now())
    path = f"/ws/runs/?view=run&run={run.pk}&schedule={schedule.pk}&offset=5&status=running"
    comm = communicator(path, viewer)
    assert (await comm.connect())[0]
    await publish_output(run.pk, 0, "abcdefgh")  # overlaps what the page shows
    html = await comm.receive_from(timeout=2)
    assert html == '<div hx-swap-oob="beforeend:#run-output">fgh</div>'
    await publish_output(run.pk, 20, "<b>late</b>")  # a gap: text written meanwhile
    html = await comm.receive_from(timeout=2)
    assert "12 characters not shown live" in html
    assert "&lt;b&gt;late&lt;/b&gt;" in html
    await publish_output(run.pk + 1, 0, "another run")  # not ours: never sent
    # The run ends: its state, then its final part with the stored output.
    run.status, run.finished_at, run.result = RunStatus.SUCCEEDED, timezone.now(), {"n": 1}
    await sync_to_async(run.save)()
    await sync_to_async(RunOutput.objects.create)(run=run, text="all of it\n", total=10)
    await publish_run(run)
    html = await comm.receive_from(timeout=2)
    assert 'id="run-state" hx-swap-oob="true"' in html
    assert 'id="run-final" hx-swap-oob="true"' in html
    assert "all of it\n</pre>" in html and "s-succeeded" in html
    assert await comm.receive_nothing(timeout=0.2)
    await comm.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_run_stream_without_a_run_id_is_refused() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    comm = communicator("/ws/runs/?view=run&run=abc", viewer)
    connected, code = await comm.connect()
    assert (connected, code) == (False, 4400)
    await comm.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_run_that_moved_on_before_the_socket_connected_is_caught_up() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    run = await sync_to_async(a_run)(schedule, status=RunStatus.SUCCEEDED, result={"n": 1})
    comm = communicator(f"/ws/runs/?view=run&run={run.pk}&offset=0&status=queued", viewer)
    assert (await comm.connect())[0]
    html = await comm.receive_from(timeout=2)
    assert 'id="run-state" hx-swap-oob="true"' in html and "s-succeeded" in html
    assert 'id="run-final" hx-swap-oob="true"' in html
    await comm.disconnect()
    same = communicator(f"/ws/runs/?view=run&run={run.pk}&offset=0&status=succeeded", viewer)
    assert (await same.connect())[0]
    assert await same.receive_nothing(timeout=0.2)
    await same.disconnect()
