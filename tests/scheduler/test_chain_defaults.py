"""Follow-ups declared in code: `@schedules.task(..., then=[...], catch=[...])`."""

from __future__ import annotations

import pytest

import schedules
from schedules import checks, services
from schedules.models import Schedule
from schedules.registry import registry


@pytest.fixture
def clean_registry():
    before = {name: list(found) for name, found in registry.declarations.items()}
    yield registry
    registry.declarations.clear()
    registry.declarations.update(before)


def declare(name: str, **options) -> None:
    def body(**kwargs: object) -> dict:
        return kwargs

    body.__qualname__ = body.__name__ = name.replace(".", "_")
    schedules.task(name, every=3600, isolation="inline", **options)(body)


@pytest.mark.django_db
def test_code_defaults_carry_their_follow_ups_and_follow_the_code(clean_registry) -> None:
    declare("chain.load")
    declare("chain.cleanup")
    declare("chain.extract", then="chain.load", catch=["chain.cleanup"], result_as="data")
    services.sync_code_defaults()
    extract = Schedule.objects.get(code="chain.extract")
    assert (extract.then, extract.catch, extract.result_as) == (
        ["chain.load"],
        ["chain.cleanup"],
        "data",
    )
    declare("chain.extract", then=["chain.load", "chain.cleanup"])
    services.sync_code_defaults()
    extract.refresh_from_db()
    assert (extract.then, extract.catch, extract.result_as) == (
        ["chain.load", "chain.cleanup"],
        [],
        "",
    )
    assert checks.check_declared_chains() == []


@pytest.mark.django_db
def test_check_reports_a_declared_cycle_and_an_unknown_follow_up(clean_registry) -> None:
    declare("loop.a", then=["loop.b"])
    declare("loop.b", catch=["loop.a", "nowhere"])
    found = {(w.id, w.msg) for w in checks.check_declared_chains()}
    assert (
        "schedules.W006",
        "task 'loop.b': catch= names 'nowhere', which is neither a "
        "schedule nor a task's code default",
    ) in found
    assert (
        "schedules.W007",
        "task 'loop.a': its follow-ups make a cycle: loop.a then loop.b catch loop.a",
    ) in found


def test_bad_follow_up_options_are_declaration_problems(clean_registry) -> None:
    declare("chain.bad", then=["has spaces"], result_as="not-a-name")
    problems = registry.get("chain.bad").problems
    assert "then must name schedule codes, got 'has spaces'" in problems
    assert "result_as must be a keyword argument name, got 'not-a-name'" in problems
