"""The schedules search: codes through a trigram index, task names through the names in use."""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction
from django.db.migrations.recorder import MigrationRecorder

from schedules import search
from schedules.apps import restore_triggers
from schedules.models import Schedule
from schedules.selectors import filtered_schedules
from tests.factories import every, make_schedule

pytestmark = pytest.mark.django_db


def found(text: str) -> list[str]:
    return list(filtered_schedules({"q": text}).values_list("code", flat=True))


@pytest.fixture
def named() -> None:
    for code, task_name in [
        ("billing-eu", "test.echo"),
        ("billing-us", "test.echo_async"),
        ("reports-eu", "test.fail"),
        ("x9", "test.echo"),
    ]:
        make_schedule(code, task_name, every(60))


def test_a_search_finds_a_text_anywhere_in_the_code_whatever_its_case(named) -> None:
    assert found("lling") == ["billing-eu", "billing-us"]
    assert found("ING-E") == ["billing-eu"]
    assert found("-eu") == ["billing-eu", "reports-eu"]
    assert found("x9") == ["x9"]  # shorter than a trigram: every code is read instead
    assert found("g") == ["billing-eu", "billing-us"]
    assert found("billing-eux") == []


def test_a_search_finds_a_text_anywhere_in_the_task_name(named) -> None:
    assert found("ECHO") == ["billing-eu", "billing-us", "x9"]
    assert found("echo_a") == ["billing-us"]
    assert found("st.fa") == ["reports-eu"]


def test_past_the_names_a_page_walks_task_names_are_read_row_by_row(named, monkeypatch) -> None:
    monkeypatch.setattr("schedules.models.TASK_NAMES_WALKED", 2)  # 3 in use
    assert found("ECHO") == ["billing-eu", "billing-us", "x9"]
    assert found("st.fa") == ["reports-eu"]
    assert found("lling") == ["billing-eu", "billing-us"]


def test_quotes_wildcards_and_operators_are_searched_as_text(named) -> None:
    for text in ['"', 'bill"ing', "%", "__", "billing*", "billing OR reports", "NEAR(a b)", "'"]:
        assert found(text) == [], text


def test_the_index_follows_renames_and_deletes(named) -> None:
    schedule = Schedule.objects.get(code="billing-eu")
    Schedule.objects.filter(pk=schedule.pk).update(code="invoices-eu")
    assert found("billing") == ["billing-us"]
    assert found("voices") == ["invoices-eu"]
    Schedule.objects.filter(code="invoices-eu").delete()
    assert found("voices") == []
    make_schedule("invoices-us", "test.echo", every(60))
    assert found("voices") == ["invoices-us"]


def test_a_code_search_reads_the_trigram_index_not_every_schedule(named) -> None:
    for i in range(200):
        make_schedule(f"filler-{i:03d}", "test.echo", every(60))
    page = filtered_schedules({"q": "billing"})
    if connection.vendor == "sqlite":
        plan = page.explain()
        assert search.SEARCH_TABLE in plan, plan
        assert not re.search(r"SCAN schedules_schedule\b", plan), plan  # the index's own: fine
    else:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("ANALYZE schedules_schedule")
            # A table this small is read whole or in code order whatever the indexes;
            # left only the bitmap scans, the plan says whether the index fits the query.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_indexscan = off")
            plan = page.explain()
        assert search.POSTGRES_INDEX in plan, plan


@pytest.mark.django_db(transaction=True)
def test_migrating_puts_back_an_index_a_table_rebuild_dropped() -> None:
    """Django's SQLite schema editor rebuilds a table to alter it, which drops its
    triggers: after any migrate of this app, they are back and the index current."""
    make_schedule("billing-eu", "test.echo", every(60))
    search.drop_index(connection)
    make_schedule("billing-us", "test.echo", every(60))  # while the index is gone
    assert found("billing") == ["billing-eu", "billing-us"]  # every code read meanwhile
    latest = MigrationRecorder.Migration.objects.filter(app="schedules").latest("id")

    class Applied:  # a plan's entry, as the migrate command sends it
        app_label, name = latest.app, latest.name

    restore_triggers(using="default", plan=[(Applied, False)])
    if connection.vendor == "sqlite":
        assert search._sqlite_indexed(connection)
    page = filtered_schedules({"q": "billing"})
    assert search.SEARCH_TABLE in str(page.query) or connection.vendor != "sqlite"
    assert found("billing") == ["billing-eu", "billing-us"]
    assert found("g-us") == ["billing-us"]
