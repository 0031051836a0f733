"""Roles and measuring helpers of the hostile-input suite."""

from __future__ import annotations

import pytest

from schedules.timing import limits as timing_limits
from tests.dashboard.conftest import HX, member  # noqa: F401 - re-exported for the tests
from tests.scheduler.conftest import clock, scheduler  # noqa: F401 - the fake-clock scheduler

ROLES = ("anonymous", "stranger", "viewer", "operator", "editor", "owner")
GROUPS = {"viewer": "Viewers", "operator": "Operators", "editor": "Editors"}


def login_as(client, role: str):
    """`client` logged in as a fresh user of `role` (anonymous: not logged in)."""
    if role == "anonymous":
        return client
    if role == "owner":
        user = member("owner", is_superuser=True, is_staff=True)
    else:
        user = member(role, GROUPS.get(role))
    client.force_login(user)
    return client


@pytest.fixture
def steps(monkeypatch) -> list[int]:
    """Counts every step the timing engine's search meters spend (work, not wall time)."""
    spent = [0]
    original = timing_limits.Meter.spend

    def counting(self, n: int) -> None:
        spent[0] += n
        original(self, n)

    monkeypatch.setattr(timing_limits.Meter, "spend", counting)
    return spent
