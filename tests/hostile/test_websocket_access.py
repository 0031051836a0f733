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


# Every live socket: the live pages' and the header's incident count.
SOCKETS = ["/ws/runs/?view=log", "/ws/incidents/"]


async def open_socket(client: Client, path: str = SOCKETS[0]) -> WebsocketCommunicator:
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    comm = WebsocketCommunicator(
        application,
        path,
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


async def drain(comm: WebsocketCommunicator) -> None:
    """Read what the socket sends at connect (the incident count)."""
    while not await comm.receive_nothing(timeout=0.2):
        message = await comm.receive_output()
        assert message["type"] == "websocket.send", message  # still allowed: stays open


@pytest.mark.parametrize("path", SOCKETS)
async def test_the_socket_closes_after_logout(settings, path) -> None:
    settings.SILLO_WS_RECHECK_INTERVAL = 0.05
    client = await logged_in_viewer()
    comm = await open_socket(client, path)
    await drain(comm)
    await sync_to_async(client.logout)()
    closed = await comm.receive_output(timeout=3)
    assert closed == {"type": "websocket.close", "code": 4403}
    await comm.disconnect()


@pytest.mark.parametrize("path", SOCKETS)
async def test_the_socket_closes_after_the_view_permission_is_removed(settings, path) -> None:
    settings.SILLO_WS_RECHECK_INTERVAL = 0.05
    client = await logged_in_viewer()
    comm = await open_socket(client, path)
    await drain(comm)

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
