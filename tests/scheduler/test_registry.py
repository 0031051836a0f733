"""Declaring tasks: discovery, duplicates, failed imports, bad defaults, system checks."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

import schedules
from schedules.registry import autodiscover, registry

pytestmark = pytest.mark.django_db


@pytest.fixture
def clean_registry():
    before = {name: list(found) for name, found in registry.declarations.items()}
    failed = dict(registry.failed_imports)
    yield registry
    registry.declarations.clear()
    registry.declarations.update(before)
    registry.failed_imports.clear()
    registry.failed_imports.update(failed)


def test_tasks_are_discovered_from_installed_apps() -> None:
    declaration = registry.get("test.every_hour")
    assert declaration is not None
    assert declaration.module == "tests.taskapp.tasks"
    assert declaration.default_trigger.to_spec()["every"] == 3600
    assert registry.get("test.echo_async").is_async
    assert not registry.get("test.echo").is_async
    assert registry.get("demo.heartbeat") is not None


def test_the_decorator_returns_the_function_unchanged(clean_registry) -> None:
    def plain(x: int) -> int:
        return x * 2

    assert schedules.task("test.plain")(plain) is plain
    assert plain(21) == 42


def test_a_duplicate_name_excludes_every_declaration(clean_registry) -> None:
    @schedules.task("test.twice")
    def first() -> None: ...

    @schedules.task("test.twice")
    def second() -> None: ...

    assert registry.get("test.twice") is None
    assert registry.status_of("test.twice") == "duplicate"
    assert "test.twice" in registry.duplicate_names()
    with pytest.raises(
        SystemCheckError, match="schedules.W001.*test.twice.*declared more than once"
    ):
        call_command("check", fail_level="WARNING")


def test_a_duplicate_never_stops_commands_and_can_be_listed(clean_registry, db) -> None:
    from io import StringIO

    from tests.factories import every, make_schedule

    @schedules.task("test.twice")
    def first() -> None: ...

    @schedules.task("test.twice")
    def second() -> None: ...

    make_schedule("twice", "test.twice", every(60))
    call_command("check")  # warnings only: printed, not fatal
    call_command("migrate", verbosity=0)
    out = StringIO()
    call_command("schedules", "list", "--flag", "duplicate", stdout=out)
    assert out.getvalue().startswith("twice")
    assert "[DUPLICATE]" in out.getvalue()


def test_reimporting_a_module_is_not_a_duplicate(clean_registry) -> None:
    def task_body() -> None: ...

    schedules.task("test.same")(task_body)
    schedules.task("test.same")(task_body)
    assert registry.get("test.same") is not None


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"every": 60, "cron": "* * * * *"}, "declare either every= or cron=, not both"),
        ({"cron": "0 0 30 2 *"}, "invalid default schedule: '0 0 30 2 *' never fires"),
        ({"every": 0}, "invalid default schedule: interval every must be positive"),
        ({"cron": "* * * * *", "tz": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
        ({"tz": "UTC"}, "tz= only applies together with cron="),
        ({"max_attempts": 0}, "max_attempts must be at least 1"),
        ({"overlap": "queue"}, "overlap must be one of skip, replace"),
        ({"misfire": "later"}, "misfire must be one of skip, once, all"),
    ],
)
def test_bad_declarations_are_reported_by_checks(clean_registry, kwargs, problem) -> None:
    @schedules.task("test.bad", **kwargs)
    def bad() -> None: ...

    declaration = registry.get("test.bad")
    assert any(problem in p for p in declaration.problems)
    with pytest.raises(SystemCheckError, match="schedules.W002"):
        call_command("check", fail_level="WARNING")


def test_a_failing_tasks_module_is_reported_and_the_rest_keep_working(clean_registry) -> None:
    autodiscover(["tests.brokenapp", "tests.taskapp"])
    assert "tests.brokenapp.tasks" in registry.failed_imports
    assert "ImportError" in registry.failed_imports["tests.brokenapp.tasks"]
    assert registry.get("test.echo") is not None
    with pytest.raises(SystemCheckError, match="schedules.W003.*tests.brokenapp.tasks"):
        call_command("check", fail_level="WARNING")


def test_an_app_without_tasks_is_fine(clean_registry) -> None:
    autodiscover(["django.contrib.auth"])
    assert "django.contrib.auth.tasks" not in registry.failed_imports


def test_check_passes_for_the_declared_tasks() -> None:
    call_command("check", fail_level="WARNING")
