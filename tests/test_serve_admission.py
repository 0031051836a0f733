"""`runscheduler --serve` lets at most SILLO_SERVE_REQUESTS requests into Django at once.

The scheduler shares that process: every request inside Django is a thread that
competes with its loop (schedules/admission.py). The real server with 20 users is
measured in bench/dashboard_scale.py; here, the rule itself, with an app that reads
its request as Django's ASGI handler does (the whole body, then the view).
"""

from __future__ import annotations

import asyncio

import pytest

from schedules.admission import AdmissionLimit
from schedules.conf import setting_problems
from schedules.management.commands.runscheduler import served_application


class Counting:
    """An ASGI app that notes which requests were inside it at once (past their body),
    in entry order, and then answers; or, as its scope says, fails or streams."""

    def __init__(self) -> None:
        self.inside = self.most = 0
        self.entered: list[int] = []
        self.finish_streams = asyncio.Event()

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] == "http":
            while (await receive()).get("more_body"):
                pass
        self.inside += 1
        self.most = max(self.most, self.inside)
        self.entered.append(scope["n"])
        for _ in range(5):  # stays inside while the others arrive
            await asyncio.sleep(0)
        self.inside -= 1
        if scope.get("fails"):
            raise RuntimeError("the view failed")
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            if scope.get("streams"):
                await self.finish_streams.wait()
            await send({"type": "http.response.body", "body": b""})


async def whole_body() -> dict:
    return {"type": "http.request", "body": b"", "more_body": False}


async def discard(message: dict) -> None:
    pass


def arrive(app, scopes: list[dict]) -> None:
    async def all_at_once() -> None:
        answers = asyncio.gather(
            *(app(scope, whole_body, discard) for scope in scopes), return_exceptions=True
        )
        await asyncio.wait_for(answers, 5)  # a place never given back fails, not hangs

    asyncio.run(all_at_once())


def requests(count: int, **extra) -> list[dict]:
    return [{"type": "http", "n": n, **extra} for n in range(count)]


def test_requests_past_the_limit_wait_and_go_in_in_arrival_order() -> None:
    unlimited = Counting()
    arrive(unlimited, requests(8))
    assert unlimited.most == 8  # without the limit, every request is inside at once

    counting = Counting()
    arrive(AdmissionLimit(counting, 2), requests(8))
    assert counting.most == 2
    assert counting.entered == list(range(8))


def test_a_failed_request_frees_its_place() -> None:
    counting = Counting()
    arrive(AdmissionLimit(counting, 1), requests(3, fails=True) + requests(2))
    assert counting.entered == [0, 1, 2, 0, 1]  # all five got in, one at a time
    assert counting.most == 1


def test_a_streamed_response_frees_its_place_when_it_starts() -> None:
    async def scenario() -> list[int]:
        counting = Counting()
        limited = AdmissionLimit(counting, 1)
        download = asyncio.ensure_future(
            limited({"type": "http", "n": 0, "streams": True}, whole_body, discard)
        )
        page = asyncio.ensure_future(limited({"type": "http", "n": 1}, whole_body, discard))
        await asyncio.wait_for(page, 5)  # answered while the download still streams
        assert not download.done()
        counting.finish_streams.set()
        await download
        return counting.entered

    assert asyncio.run(scenario()) == [0, 1]


def test_a_body_still_arriving_holds_no_place() -> None:
    async def scenario() -> list[int]:
        counting = Counting()
        limited = AdmissionLimit(counting, 1)
        rest_of_body = asyncio.Event()

        async def slow_upload() -> dict:
            await rest_of_body.wait()
            return {"type": "http.request", "body": b"x", "more_body": False}

        upload = asyncio.ensure_future(limited({"type": "http", "n": 0}, slow_upload, discard))
        page = asyncio.ensure_future(limited({"type": "http", "n": 1}, whole_body, discard))
        await asyncio.wait_for(page, 5)  # answered while the upload is still arriving
        rest_of_body.set()
        await asyncio.wait_for(upload, 5)
        return counting.entered

    assert asyncio.run(scenario()) == [1, 0]


def test_websockets_are_not_counted() -> None:
    counting = Counting()
    arrive(AdmissionLimit(counting, 1), [{"type": "websocket", "n": n} for n in range(3)])
    assert counting.most == 3


def test_the_served_application_takes_its_limit_from_the_setting(settings) -> None:
    settings.SILLO_SERVE_REQUESTS = 3
    application = served_application()
    assert isinstance(application, AdmissionLimit)
    assert application.limit == 3
    settings.SILLO_SERVE_REQUESTS = 0
    assert setting_problems() == ["SILLO_SERVE_REQUESTS must be from 1 to 1024, got 0"]
    with pytest.raises(ValueError, match="at least 1"):
        AdmissionLimit(application.application, 0)
