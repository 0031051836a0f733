"""The schedules list: who sees what, actions in place, filters, pagination, query count."""

from __future__ import annotations

import pytest
from django.core.paginator import Paginator

from schedules.models import Run, RunStatus, Schedule, task_names_in_use
from schedules.registry import registry
from schedules.web.paging import KeyedPaginator
from tests.factories import every, make_schedule, plan_of

from .conftest import HX

pytestmark = pytest.mark.django_db


def test_it_requires_login(client, schedule) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/login/?next=/"


def test_it_requires_the_view_permission(client, stranger, schedule) -> None:
    client.force_login(stranger)
    assert client.get("/").status_code == 403


def test_a_viewer_sees_rows_but_no_operate_buttons(client, viewer, schedule) -> None:
    client.force_login(viewer)
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "nightly" in html and "At 03:00, UTC" in html
    for button in ("Run now", ">Pause<", ">Cancel<", ">Delete<", "New schedule"):
        assert button not in html


def test_an_operator_sees_operate_buttons_but_not_delete(client, operator, schedule) -> None:
    client.force_login(operator)
    html = client.get("/").content.decode()
    assert "Run now" in html and ">Pause<" in html and ">Cancel<" in html
    assert ">Delete<" not in html


def test_orphans_and_duplicates_are_flagged_with_the_reason(client, viewer, orphan) -> None:
    client.force_login(viewer)
    html = client.get("/").content.decode()
    assert "ORPHAN" in html
    assert "The task &#x27;no.such.task&#x27; is not declared (orphan)" in html
    assert "schedule(s) name a task no code declares" in html  # the banner


def orphans_among_declared_names() -> None:
    named = [("early", "a.gone"), ("kept", "test.echo"), ("middle", "test.missing"),
             ("late", "zz.gone"), ("later", "zz.gone")]  # fmt: skip
    for code, task_name in named:
        make_schedule(code, task_name, every(60))


def test_orphans_are_the_schedules_of_the_task_names_no_code_declares() -> None:
    orphans_among_declared_names()
    assert task_names_in_use() == ["a.gone", "test.echo", "test.missing", "zz.gone"]
    orphans = Schedule.objects.with_flag("orphan", registry)
    assert sorted(orphans.values_list("code", flat=True)) == ["early", "late", "later", "middle"]
    Schedule.objects.all().delete()
    assert task_names_in_use() == [] and not Schedule.objects.with_flag("orphan", registry)


def test_past_the_names_a_page_walks_orphans_are_found_by_reading_every_schedule(
    monkeypatch,
) -> None:
    """A million task names would be a million seeks a page, and more than an IN holds."""
    orphans_among_declared_names()
    monkeypatch.setattr("schedules.models.TASK_NAMES_WALKED", 3)  # 4 in use
    assert task_names_in_use() is None
    orphans = Schedule.objects.with_flag("orphan", registry)
    assert sorted(orphans.values_list("code", flat=True)) == ["early", "late", "later", "middle"]


@pytest.mark.sqlite
def test_orphans_are_found_without_reading_every_schedule() -> None:
    """One index seek a name, then the orphans read by name: a million schedules cost
    what a few do (a NOT IN of the declared names read them all, 205 ms a page)."""
    orphans_among_declared_names()
    orphans = Schedule.objects.with_flag("orphan", registry)
    for read in (task_names_in_use, orphans.count):
        plan = plan_of(read, table="schedules_schedule")
        assert "schedule_task_idx" in plan and "SCAN schedules_schedule" not in plan, plan


def test_a_viewer_posting_anyway_gets_403_and_nothing_changes(client, viewer, schedule) -> None:
    client.force_login(viewer)
    assert client.post(f"/schedules/{schedule.pk}/pause/", **HX).status_code == 403
    assert client.post(f"/schedules/{schedule.pk}/run/", **HX).status_code == 403
    schedule.refresh_from_db()
    assert schedule.status == "active"
    assert not Run.objects.exists()


def test_pause_swaps_the_row_in_place(client, operator, schedule) -> None:
    client.force_login(operator)
    response = client.post(f"/schedules/{schedule.pk}/pause/", **HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.strip().startswith(f'<tr id="schedule-row-{schedule.pk}"')
    assert ">Resume<" in html and ">Pause<" not in html
    schedule.refresh_from_db()
    assert schedule.status == "paused"


def test_a_refused_transition_shows_its_reason(client, operator, schedule) -> None:
    client.force_login(operator)
    response = client.post(f"/schedules/{schedule.pk}/resume/", **HX)
    assert response.status_code == 200
    assert "cannot resume schedule &#x27;nightly&#x27;: it is active" in response.content.decode()


def test_without_htmx_actions_redirect(client, operator, schedule) -> None:
    client.force_login(operator)
    response = client.post(f"/schedules/{schedule.pk}/pause/")
    assert response.status_code == 302
    assert response["Location"] == f"/schedules/{schedule.pk}/"


def test_run_now_queues_and_says_no_scheduler_is_running(client, operator, schedule) -> None:
    client.force_login(operator)
    response = client.post(f"/schedules/{schedule.pk}/run/", **HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "queued" in html and "no scheduler is running" in html
    run = Run.objects.get()
    assert (run.status, run.reason, run.requested_by) == (RunStatus.QUEUED, "manual", operator)


def test_run_now_is_refused_for_an_orphan(client, operator, orphan) -> None:
    client.force_login(operator)
    response = client.post(f"/schedules/{orphan.pk}/run/", **HX)
    assert "is not declared (orphan)" in response.content.decode()
    assert not Run.objects.exists()


def test_run_now_is_disabled_while_max_instances_are_in_flight(client, operator, schedule) -> None:
    Run.objects.create(
        schedule=schedule, schedule_code="nightly", task_name="test.echo", reason="manual",
        status=RunStatus.RUNNING,
    )  # fmt: skip
    client.force_login(operator)
    html = client.get("/").content.decode()
    assert 'disabled title="Run now is refused: 1 run(s) in flight (max_instances=1)"' in html


def test_delete_needs_the_delete_permission(client, operator, editor, schedule) -> None:
    client.force_login(operator)
    assert client.post(f"/schedules/{schedule.pk}/delete/", **HX).status_code == 403
    client.force_login(editor)
    assert client.post(f"/schedules/{schedule.pk}/delete/", **HX).status_code == 200
    assert not Schedule.objects.exists()


def test_bulk_actions(client, operator) -> None:
    a = make_schedule("a", "test.echo", every(60))
    b = make_schedule("b", "test.echo", every(60))
    client.force_login(operator)
    response = client.post("/schedules/bulk/", {"action": "pause", "selected": [a.pk, b.pk]}, **HX)
    assert response.status_code == 200
    assert set(Schedule.objects.values_list("status", flat=True)) == {"paused"}
    client.post("/schedules/bulk/", {"action": "run", "selected": [a.pk]}, **HX)
    assert Run.objects.filter(schedule=a).count() == 1


def test_search_and_filters(client, viewer, orphan) -> None:
    make_schedule("reports-eu", "test.echo", every(60))
    paused = make_schedule("reports-us", "test.echo", every(60))
    paused.status = "paused"
    paused.save()
    client.force_login(viewer)

    def codes(query: str) -> list[str]:
        html = client.get(f"/?{query}", **HX).content.decode()
        return [code for code in ("reports-eu", "reports-us", "ghost") if f">{code}<" in html]

    assert codes("q=reports") == ["reports-eu", "reports-us"]
    assert codes("status=paused") == ["reports-us"]
    assert codes("flag=orphan") == ["ghost"]
    assert codes("outcome=never&q=eu") == ["reports-eu"]


def test_pagination(client, viewer) -> None:
    for i in range(120):
        make_schedule(f"s{i:03d}", "test.echo", every(60))
    client.force_login(viewer)
    html = client.get("/?page=3").content.decode()
    assert "Page 3 of 3" in html and ">s100<" in html and ">s099<" not in html


def test_keyed_pages_hold_the_rows_and_order_of_sliced_ones() -> None:
    for i in range(23):
        make_schedule(f"k{(i * 7) % 23:02d}", "test.echo", every(60))
    schedules = Schedule.objects.exclude(code="k05").order_by("code")
    keyed, sliced = KeyedPaginator(schedules, 5, orphans=2), Paginator(schedules, 5, orphans=2)
    assert keyed.num_pages == sliced.num_pages == 4  # the last page takes the 7 left
    for number in keyed.page_range:
        rows = [s.code for s in keyed.page(number).object_list]
        assert rows == [s.code for s in sliced.page(number).object_list], number
    assert [s.code for s in keyed.page(4)] == [f"k{i}" for i in range(16, 23)]
    nothing = KeyedPaginator(schedules.filter(code="none"), 5).page(1)  # the empty first page
    assert list(nothing) == [] and nothing.paginator.count == 0


@pytest.mark.sqlite
def test_a_deep_page_walks_the_code_index_alone_to_its_offset() -> None:
    """A sliced page read every skipped schedule from the table: 32 ms of page 10,000
    at a million schedules, where walking the keys takes 11."""
    for i in range(60):
        make_schedule(f"d{i:02d}", "test.echo", every(60))
    page = KeyedPaginator(Schedule.objects.order_by("code"), 10).page(5)
    plan = plan_of(lambda: list(page.object_list), table="schedules_schedule")
    assert "COVERING INDEX sqlite_autoindex_schedules_schedule_1" in plan, plan
    assert "SCAN schedules_schedule USING INDEX" not in plan, plan


def test_the_list_costs_the_same_queries_for_10_or_50_rows(
    client, operator, django_assert_num_queries
) -> None:
    for i in range(10):
        make_schedule(f"a{i}", "test.echo", every(60))
    client.force_login(operator)
    client.get("/")  # warm caches (content types, permissions)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as small:
        client.get("/")
    for i in range(40):
        make_schedule(f"b{i}", "test.echo", every(60))
    with CaptureQueriesContext(connection) as large:
        client.get("/")
    assert len(small) == len(large)
    assert len(large) <= 13  # the outcome strips of the page are one query (a window)
