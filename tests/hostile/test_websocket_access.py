"""An open websocket is closed once its user logs out or loses the view permission."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group
from django.test import Client

from sillo_dash.asgi import application

from .conftest import member

pytestmark = pytest.mark.django_db(transaction=True)


async def open_socket(client: Client) -> WebsocketCommunicator:
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    comm = WebsocketCommunicator(
        application,
        "/ws/runs/?view=log",
        headers=[(b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", cookie)],
    )
    connected, _ = await comm.connect()
    assert connected
    return comm


async def logged_in_viewer() -> Client:
    def make() -> Client:
        client = Client()
        client.force_login(member("watcher", "Viewers"))
        return client

    return await sync_to_async(make)()


async def test_the_socket_closes_after_logout(settings) -> None:
    settings.SILLO_WS_RECHECK_INTERVAL = 0.05
    client = await logged_in_viewer()
    comm = await open_socket(client)
    assert await comm.receive_nothing(timeout=0.2)  # still allowed: stays open
    await sync_to_async(client.logout)()
    closed = await comm.receive_output(timeout=3)
    assert closed == {"type": "websocket.close", "code": 4403}
    await comm.disconnect()


async def test_the_socket_closes_after_the_view_permission_is_removed(settings) -> None:
    settings.SILLO_WS_RECHECK_INTERVAL = 0.05
    client = await logged_in_viewer()
    comm = await open_socket(client)
    assert await comm.receive_nothing(timeout=0.2)

    def remove() -> None:
        from django.contrib.auth.models import User

        User.objects.get(username="watcher").groups.remove(Group.objects.get(name="Viewers"))

    await sync_to_async(remove)()
    closed = await comm.receive_output(timeout=3)
    assert closed == {"type": "websocket.close", "code": 4403}
    await comm.disconnect()


def test_the_default_recheck_closes_within_a_minute() -> None:
    from schedules.conf import DEFAULTS

    assert DEFAULTS["SILLO_WS_RECHECK_INTERVAL"] < 60


@pytest.mark.parametrize("path", ["/ws/nope/", "/ws/runs/extra/", "/", "/%00/.."])
async def test_a_path_no_socket_serves_is_refused_at_the_handshake(path) -> None:
    client = await logged_in_viewer()
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    comm = WebsocketCommunicator(
        application,
        path,
        headers=[(b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", cookie)],
    )
    connected, _ = await comm.connect()
    assert not connected
    await comm.disconnect()
