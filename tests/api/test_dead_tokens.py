"""An expired or revoked token opens no endpoint, even an Editor's."""

from __future__ import annotations

import pytest

from schedules import tokens
from schedules.models import Run, Schedule

from .conftest import api_member, bearer, errors_of, expired
from .test_permissions import ENDPOINTS, Endpoint


def _revoked(user):
    issued = tokens.token_issue(user=user, name="old")
    tokens.token_revoke(token=issued.token)
    return bearer(issued.secret)


@pytest.mark.parametrize("state", ["expired", "revoked"])
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e.method} {e.path}")
def test_a_dead_token_is_refused_everywhere(schedule, endpoint: Endpoint, state: str) -> None:
    endpoint.setup()
    run = Run.objects.order_by("-pk").first()
    path = endpoint.path.replace("{run}", str(run.pk if run else 0))
    editor = api_member(f"editor-{state}", "Editors")
    caller = expired(editor) if state == "expired" else _revoked(editor)
    before = Schedule.objects.count(), Run.objects.count()

    response = caller.call(endpoint.method, path, endpoint.body)

    assert response.status_code == 401, response.content
    assert errors_of(response) == {None: f"token 'old' is {state}"}
    assert (Schedule.objects.count(), Run.objects.count()) == before
