"""At most a few HTTP requests inside Django at once, for the process that also schedules.

Under ASGI, Django runs each request's synchronous code in a thread of its own: 20
users loading pages at once make 20 threads, which take turns on one interpreter lock
with each other and with the scheduler's event loop. Measured with 20 users and 100
runs a second (docs/deploy.md, "One process"), that cost the scheduler up to 2 s of
lateness on PostgreSQL, and served no more pages than one request at a time did.
Requests past the limit wait in the event loop, which costs nothing, and go in first
come, first served.

A request keeps its place until its response starts. Django starts a page's response
once the page is rendered, so the place covers its work; a streamed response (a run
export) starts at once, so a slow download does not keep the dashboard waiting.
Websockets are not counted: they are long lived and mostly idle.
"""

from __future__ import annotations

import asyncio
from typing import Any


class AdmissionLimit:
    """An ASGI wrapper: at most `limit` HTTP requests in `application` before their
    responses start; the rest wait their turn (asyncio.Semaphore wakes waiters in order)."""

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
        await places.acquire()
        held = True

        async def send_and_give_up_the_place(message: dict) -> None:
            nonlocal held
            if held and message["type"] == "http.response.start":
                held = False
                places.release()
            await send(message)

        try:
            return await self.application(scope, receive, send_and_give_up_the_place)
        finally:
            if held:  # no response (an error, a client gone): the place is free again
                places.release()
