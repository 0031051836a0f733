"""The live websocket: who may connect, and which events reach which groups."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.template.loader import render_to_string

from schedules.events import ALL_RUNS_GROUP, RunEvent, publish_run, publish_run_events
from schedules.models import Run, RunStatus, Schedule
from schedules.web import fragments
from schedules.web.consumers import RunEventsConsumer
from sillo_dash.asgi import application
from tests.factories import every, make_schedule

from .conftest import member

pytestmark = pytest.mark.django_db(transaction=True)


def communicator(path: str, user) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(RunEventsConsumer.as_asgi(), path)
    comm.scope["user"] = user
    return comm


async def make_run(schedule, status: str, error: str = "") -> Run:
    return await sync_to_async(Run.objects.create)(
        schedule=schedule, schedule_code=schedule.code, task_name=schedule.task_name,
        reason="scheduled", status=status, error=error,
    )  # fmt: skip


async def test_anonymous_users_are_refused() -> None:
    comm = communicator("/ws/runs/", AnonymousUser())
    connected, code = await comm.connect()
    assert (connected, code) == (False, 4403)
    await comm.disconnect()


async def test_users_without_the_view_permission_are_refused() -> None:
    stranger = await sync_to_async(member)("stranger")
    comm = communicator("/ws/runs/", stranger)
    connected, code = await comm.connect()
    assert (connected, code) == (False, 4403)
    await comm.disconnect()


async def test_a_foreign_origin_is_refused_by_the_full_stack() -> None:
    comm = WebsocketCommunicator(
        application,
        "/ws/runs/",
        headers=[(b"origin", b"https://evil.example"), (b"host", b"localhost")],
    )
    connected, _ = await comm.connect()
    assert connected is False
    await comm.disconnect()


async def test_the_log_view_receives_every_run_as_a_row() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    comm = communicator("/ws/runs/?view=log", viewer)
    assert (await comm.connect())[0]
    await publish_run(await make_run(schedule, RunStatus.FAILED, "boom <b>"))
    html = await comm.receive_from(timeout=2)
    assert 'id="live-log-rows" hx-swap-oob="afterbegin"' in html
    assert "nightly" in html and "failed" in html
    assert "boom &lt;b&gt;" in html
    await comm.disconnect()


async def test_a_batch_of_run_events_reaches_the_log_as_one_frame_in_order() -> None:
    """A busy scheduler sends a batch of events in one message: the page gets one frame
    with a row for each, in the order they happened (htmx swaps each in turn)."""
    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    comm = communicator("/ws/runs/?view=log", viewer)
    assert (await comm.connect())[0]
    runs = [await make_run(schedule, RunStatus.SUCCEEDED) for _ in range(3)]
    await publish_run_events([RunEvent.from_run(run) for run in runs])
    html = await comm.receive_from(timeout=2)
    shown = [int(pk) for pk in re.findall(r'data-run="(\d+)"', html)]
    assert shown == [run.pk for run in runs]
    assert html.count('hx-swap-oob="afterbegin"') == 3
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_a_single_run_event_from_an_older_process_still_shows() -> None:
    from channels.layers import get_channel_layer

    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    comm = communicator("/ws/runs/?view=log", viewer)
    assert (await comm.connect())[0]
    run = await make_run(schedule, RunStatus.FAILED)
    await get_channel_layer().group_send(ALL_RUNS_GROUP, RunEvent.from_run(run).marshal())
    html = await comm.receive_from(timeout=2)
    assert f'data-run="{run.pk}"' in html and "failed" in html
    await comm.disconnect()


async def test_a_schedule_stream_gets_only_that_schedule() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    mine = await sync_to_async(make_schedule)("mine", "test.echo", every(60))
    other = await sync_to_async(make_schedule)("other", "test.echo", every(60))
    comm = communicator(f"/ws/runs/?view=detail&schedule={mine.pk}", viewer)
    assert (await comm.connect())[0]
    await publish_run(await make_run(other, RunStatus.SUCCEEDED))
    assert await comm.receive_nothing(timeout=0.3)
    run = await make_run(mine, RunStatus.RUNNING)
    await sync_to_async(Run.objects.filter(pk=run.pk).update)(started_at=run.queued_at)
    run = await sync_to_async(Run.objects.get)(pk=run.pk)
    await publish_run(run)
    html = await comm.receive_from(timeout=2)
    assert f'id="run-now-{mine.pk}"' in html and 'hx-swap-oob="true"' in html
    assert "running" in html and "data-elapsed-since" in html
    await comm.disconnect()


async def test_the_list_view_receives_whole_rows_with_the_users_buttons() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    comm = communicator(f"/ws/runs/?view=list&schedules={schedule.pk}", viewer)
    assert (await comm.connect())[0]
    await publish_run(await make_run(schedule, RunStatus.SUCCEEDED))
    html = await comm.receive_from(timeout=2)
    assert html.strip().startswith(f'<tr id="schedule-row-{schedule.pk}"')
    assert "Run now" not in html  # a viewer gets no operate buttons, live or not
    await comm.disconnect()


async def test_the_list_view_gets_only_the_schedules_of_its_page() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    shown = await sync_to_async(make_schedule)("shown", "test.echo", every(60))
    other = await sync_to_async(make_schedule)("other", "test.echo", every(60))
    comm = communicator(f"/ws/runs/?view=list&schedules={shown.pk}", viewer)
    assert (await comm.connect())[0]
    await publish_run(await make_run(other, RunStatus.SUCCEEDED))
    await publish_run(await make_run(shown, RunStatus.SUCCEEDED))
    html = await comm.receive_from(timeout=2)
    assert f'id="schedule-row-{shown.pk}"' in html
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_a_list_page_gets_one_layer_message_a_batch_not_one_per_row(monkeypatch) -> None:
    """Each layer message costs the page's socket a trip through Redis and daphne: a
    batch of events for five of its rows reaches it as one message, and five rows."""
    heard, handle = [], RunEventsConsumer.run_event

    async def counted(consumer, message):
        heard.append(len(message["runs"]))
        await handle(consumer, message)

    monkeypatch.setattr(RunEventsConsumer, "run_event", counted)
    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedules = [
        await sync_to_async(make_schedule)(f"s{i}", "test.echo", every(60)) for i in range(5)
    ]
    ids = ",".join(str(schedule.pk) for schedule in schedules)
    comm = communicator(f"/ws/runs/?view=list&schedules={ids}", viewer)
    assert (await comm.connect())[0]
    runs = [await make_run(schedule, RunStatus.SUCCEEDED) for schedule in schedules]
    await publish_run_events([RunEvent.from_run(run) for run in runs])
    rows = set()
    while len(rows) < 5:
        html = await comm.receive_from(timeout=2)
        rows.update(int(pk) for pk in re.findall(r'id="schedule-row-(\d+)"', html))
    assert rows == {schedule.pk for schedule in schedules}
    assert heard == [5]  # one message for the five rows
    await comm.disconnect()


async def test_clients_with_the_same_permissions_share_one_render_per_event(monkeypatch) -> None:
    renders = []

    def counted(template: str, context: dict) -> str:
        renders.append(template)
        return render_to_string(template, context)

    monkeypatch.setattr(fragments, "render_to_string", counted)
    viewer = await sync_to_async(member)("viewer", "Viewers")
    operator = await sync_to_async(member)("operator", "Operators")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    page = f"/ws/runs/?view=list&schedules={schedule.pk}"
    lists = [*(communicator(page, viewer) for _ in range(5)), communicator(page, operator)]
    logs = [communicator("/ws/runs/?view=log", user) for user in (viewer, viewer, operator)]
    for comm in [*lists, *logs]:
        assert (await comm.connect())[0]
    await publish_run(await make_run(schedule, RunStatus.SUCCEEDED))
    rows = [await comm.receive_from(timeout=2) for comm in lists]
    log_rows = [await comm.receive_from(timeout=2) for comm in logs]
    # One list row per set of permissions, and one log row for everyone.
    assert sorted(renders) == ["schedules/_log_row.html", *["schedules/list.html#row"] * 2]
    assert len(set(rows[:5])) == 1 and "Run now" not in rows[0]
    assert "Run now" in rows[5]  # the operator's own buttons, not the viewers' render
    assert len(set(log_rows)) == 1 and "nightly" in log_rows[0]
    for comm in [*lists, *logs]:
        await comm.disconnect()


async def test_a_list_row_sent_after_a_burst_of_events_shows_the_latest_state() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    comm = communicator(f"/ws/runs/?view=list&schedules={schedule.pk}", viewer)
    assert (await comm.connect())[0]
    runs = [await make_run(schedule, RunStatus.SUCCEEDED) for _ in range(10)]
    for run in runs[:-1]:
        await publish_run(run)
    await sync_to_async(Schedule.objects.filter(pk=schedule.pk).update)(run_count=4242)
    await publish_run(runs[-1])
    rows = [await comm.receive_from(timeout=2)]
    while not await comm.receive_nothing(timeout=0.3):
        rows.append(await comm.receive_from(timeout=2))
    assert 1 <= len(rows) <= 10  # rows of one schedule are coalesced, never multiplied
    assert "4242 / " in rows[-1]  # the last row was rendered after the last event
    await comm.disconnect()


async def test_the_socket_is_push_only() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    comm = communicator("/ws/runs/", viewer)
    assert (await comm.connect())[0]
    await comm.send_to(text_data=f'{{"action": "run", "schedule": {schedule.pk}}}')
    assert await comm.receive_nothing(timeout=0.3)
    assert not await sync_to_async(Run.objects.exists)()
    await comm.disconnect()


async def test_events_between_page_load_and_connect_are_not_missed() -> None:
    from django.utils import timezone

    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    page_rendered = timezone.now()
    await make_run(schedule, RunStatus.SUCCEEDED)  # happens before the socket connects
    since = page_rendered.isoformat().replace("+", "%2B")
    comm = communicator(f"/ws/runs/?view=log&since={since}", viewer)
    assert (await comm.connect())[0]
    html = await comm.receive_from(timeout=2)
    assert "nightly" in html and "succeeded" in html
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_a_batch_still_reads_as_its_last_event_to_a_web_process_from_before_batches() -> None:
    """Schedulers and web processes are upgraded in any order: an older consumer reads
    a message's "run" (one event) and has no handler for another type."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    page = await layer.new_channel()
    await layer.group_add(ALL_RUNS_GROUP, page)
    runs = [await make_run(schedule, status) for status in (RunStatus.RUNNING, RunStatus.FAILED)]
    await publish_run_events([RunEvent.from_run(run) for run in runs])
    message = await layer.receive(page)
    assert message["type"] == "run.event"  # the type an older consumer handles
    assert RunEvent.unmarshal(message).id == runs[-1].pk  # and what it reads: the last
    assert [run["id"] for run in message["runs"]] == [run.pk for run in runs]
