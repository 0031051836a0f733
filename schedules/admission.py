"""At most a few HTTP requests inside Django at once, for the process that also schedules.

Under ASGI, Django runs each request's synchronous code in a thread of its own: 20
users loading pages at once make 20 threads, which take turns on one interpreter lock
with each other and with the scheduler's event loop. Measured with 20 users and 100
runs a second (docs/deploy.md, "One process"), that cost the scheduler up to 2 s of
lateness on PostgreSQL, and served no more pages than one request at a time did.
Requests past the limit wait in the event loop, which costs nothing, and go in first
come, first served.

A request takes its place once its body has arrived, and gives it up when its
response starts. So a client that sends its body slowly holds no place while it
does (else one slow upload, before any login, would stall every page; daphne
reads a body whole before it calls the app, other ASGI servers stream it); Django starts
a page's response once the page is rendered, so the place covers the page's work;
and a streamed response (a run export) starts at once, so a slow download does not
keep the dashboard waiting. Websockets are not counted: they are long lived and
mostly idle.
"""

from __future__ import annotations

import asyncio
from typing import Any


class AdmissionLimit:
    """An ASGI wrapper: at most `limit` HTTP requests in `application` between the end
    of their body and the start of their response; the rest wait their turn
    (asyncio.Semaphore wakes waiters in order)."""

    def __init__(self, application: Any, limit: int) -> None:
        if limit < 1:
            raise ValueError("the admission limit is at least 1")
        self.application = application
        self.limit = limit
        self._places: asyncio.Semaphore | None = None  # made on the serving loop

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.application(scope, receive, send)
        if self._places is None:
            self._places = asyncio.Semaphore(self.limit)
        places = self._places
        state = {"waited": False, "held": False}

        async def receive_then_wait_for_a_place() -> dict:
            message = await receive()
            whole = message["type"] == "http.request" and not message.get("more_body")
            if whole and not state["waited"]:
                state["waited"] = True
                await places.acquire()
                state["held"] = True
            return message

        async def send_and_give_up_the_place(message: dict) -> None:
            if state["held"] and message["type"] == "http.response.start":
                state["held"] = False
                places.release()
            await send(message)

        try:
            return await self.application(
                scope, receive_then_wait_for_a_place, send_and_give_up_the_place
            )
        finally:
            if state["held"]:  # no response (an error, a client gone): the place is free
                places.release()
