"""Live schedule changes: a pause, edit, delete or new schedule reaches the open pages."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from schedules import services
from schedules.events import ScheduleEvent
from schedules.web.consumers import RunEventsConsumer
from tests.factories import every, make_schedule

from .conftest import member

pytestmark = pytest.mark.django_db(transaction=True)


async def connect(path: str, user) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(RunEventsConsumer.as_asgi(), path)
    comm.scope["user"] = user
    assert (await comm.connect())[0]
    return comm


async def received(comm: WebsocketCommunicator) -> str:
    """Everything sent within a moment, in one string."""
    parts = [await comm.receive_from(timeout=2)]
    while not await comm.receive_nothing(timeout=1):
        parts.append(await comm.receive_from(timeout=1))
    return "\n".join(parts)


async def test_a_pause_by_another_operator_updates_the_list_row_and_says_who() -> None:
    alice = await sync_to_async(member)("alice", "Operators")
    bob = await sync_to_async(member)("bob", "Operators")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    comm = await connect(f"/ws/runs/?view=list&schedules={schedule.pk}", alice)
    await sync_to_async(services.schedule_pause)(schedule=schedule, by=bob)
    html = await received(comm)
    assert "<strong>nightly</strong> was paused by bob" in html
    assert f'<tr id="schedule-row-{schedule.pk}"' in html and 'hx-swap-oob="true"' in html
    assert "s-paused" in html and ">Resume</button>" in html and ">Pause</button>" not in html
    await comm.disconnect()


async def test_my_own_change_says_you() -> None:
    bob = await sync_to_async(member)("bob", "Operators")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    comm = await connect(f"/ws/runs/?view=detail&schedule={schedule.pk}", bob)
    await sync_to_async(services.schedule_pause)(schedule=schedule, by=bob)
    html = await received(comm)
    assert "was paused by you" in html
    assert '<span id="schedule-status" hx-swap-oob="true"><span class="badge s-paused">' in html
    assert 'id="schedule-verbs" hx-swap-oob="true"' in html and "Reload" in html
    await comm.disconnect()


async def test_an_edit_and_a_delete_reach_the_schedule_page_and_the_list() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    editor = await sync_to_async(member)("eve", "Editors")
    schedule = await sync_to_async(make_schedule)("nightly", "test.echo", every(60))
    detail = await connect(f"/ws/runs/?view=detail&schedule={schedule.pk}", viewer)
    listing = await connect(f"/ws/runs/?view=list&schedules={schedule.pk}", viewer)
    await sync_to_async(services.schedule_update)(schedule=schedule, trigger=every(120), by=editor)
    assert "was edited by eve" in await received(detail)
    assert "was edited by eve" in await received(listing)
    pk = schedule.pk
    await sync_to_async(services.schedule_delete)(schedule=schedule, by=editor)
    html = await received(detail)
    assert "was deleted by eve" in html and "deleted</span>" in html
    html = await received(listing)
    assert f'<tr id="schedule-row-{pk}" hx-swap-oob="delete"></tr>' in html
    await detail.disconnect()
    await listing.disconnect()


async def test_a_new_schedule_is_noticed_on_every_list_page() -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    other = await sync_to_async(make_schedule)("other", "test.echo", every(60))
    comm = await connect(f"/ws/runs/?view=list&schedules={other.pk}", viewer)
    await sync_to_async(make_schedule)("fresh", "test.echo", every(60), by="cli:alice")
    html = await received(comm)
    assert "<strong>fresh</strong> was created by cli:alice" in html and "Reload" in html
    await comm.disconnect()


@pytest.mark.parametrize(
    "page", ["/ws/runs/?view=list&schedules={pk}", "/ws/runs/?view=detail&schedule={pk}"]
)
async def test_another_schedules_change_does_not_reach_a_page_of_one(page: str) -> None:
    """A list page hears every change (the schedules group) and keeps its own rows'; a
    schedule page hears its schedule's group only."""
    viewer = await sync_to_async(member)("viewer", "Viewers")
    mine = await sync_to_async(make_schedule)("mine", "test.echo", every(60))
    other = await sync_to_async(make_schedule)("other", "test.echo", every(60))
    comm = await connect(page.format(pk=mine.pk), viewer)
    await sync_to_async(services.schedule_pause)(schedule=other, by="cli:alice")
    assert await comm.receive_nothing(timeout=0.3)
    await sync_to_async(services.schedule_pause)(schedule=mine, by="cli:alice")
    assert "<strong>mine</strong> was paused by cli:alice" in await received(comm)
    await comm.disconnect()


def test_the_event_shape_round_trips() -> None:
    event = ScheduleEvent(
        schedule_id=3, code="a", action="pause", actor="bob", at="2026-01-01T00:00:00+00:00"
    )
    assert ScheduleEvent.unmarshal(event.marshal()) == event
