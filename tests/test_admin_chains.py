"""The admin's follow-up fields: codes typed comma-separated, the save gate's errors inline."""

from __future__ import annotations

import pytest

from schedules.models import Schedule
from tests.factories import every, make_schedule
from tests.hostile.test_findings import admin_post

pytestmark = pytest.mark.django_db


def test_the_admin_saves_follow_ups_and_refuses_a_cycle(admin_client) -> None:
    make_schedule("load", "test.echo", every(3600))
    response = admin_post(admin_client, "/admin/schedules/schedule/add/", then="load, load",
                          catch="", result_as="")  # fmt: skip
    assert response.status_code == 302
    adm = Schedule.objects.get(code="adm")
    assert (adm.then, adm.catch) == (["load"], [])
    load = Schedule.objects.get(code="load")
    response = admin_post(admin_client, f"/admin/schedules/schedule/{load.pk}/change/",
                          code="load", then="", catch="adm", result_as="")  # fmt: skip
    assert response.status_code == 200
    assert "a cycle: load catch adm then load" in response.content.decode()
    assert Schedule.objects.get(code="load").catch == []
