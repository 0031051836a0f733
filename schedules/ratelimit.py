"""Rate limits shared by every process: token buckets kept in the database.

A bucket allows `rate` runs per `per` seconds, refilled continuously. Every
scheduler and worker takes tokens from the same row, so N processes together
allow the rate, not N times it. The arithmetic is pure (`refill`); `take`
is its thin database edge.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import IntegrityError, close_old_connections, transaction

from .models import RateBucket


def refill(tokens: float, elapsed: float, *, rate: int, per: float) -> float:
    """Tokens after `elapsed` seconds: continuous refill, capped at the bucket's size."""
    return min(float(rate), tokens + max(0.0, elapsed) * rate / per)


def wait_for_token(tokens: float, *, rate: int, per: float) -> float:
    """Seconds until a bucket holding `tokens` has a whole one."""
    return max(0.0, (1 - tokens) * per / rate)


def take(key: str, *, rate: int, per: float, clock: Callable[[], float] = time.time) -> float:
    """Take a token: 0.0 if taken, else the seconds until one is free (nothing taken).

    Wall-clock seconds (the bucket is shared by hosts; their skew shifts a
    refill by as much, which a rate limit can bear).
    """
    try:
        for _ in range(2):  # a bucket made by another process between our read and insert
            try:
                return _take(key, rate=rate, per=per, now=clock())
            except IntegrityError:
                continue
        return _take(key, rate=rate, per=per, now=clock())
    finally:
        close_old_connections()  # called from a worker thread, not a request


def _take(key: str, *, rate: int, per: float, now: float) -> float:
    with transaction.atomic():
        bucket = RateBucket.objects.select_for_update().filter(key=key).first()
        if bucket is None:
            RateBucket.objects.create(key=key, tokens=rate - 1, refilled_at=now)
            return 0.0
        tokens = refill(bucket.tokens, now - bucket.refilled_at, rate=rate, per=per)
        if tokens < 1:
            RateBucket.objects.filter(key=key).update(tokens=tokens, refilled_at=now)
            return wait_for_token(tokens, rate=rate, per=per)
        RateBucket.objects.filter(key=key).update(tokens=tokens - 1, refilled_at=now)
        return 0.0
