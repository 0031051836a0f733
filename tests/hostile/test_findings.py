"""One test per finding of the hostile-input review (issue 12); each failed before the fix."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from schedules import services
from schedules.models import Run, RunStatus, Schedule
from schedules.scheduler import outcomes
from tests.factories import every, make_schedule

from .conftest import HX, login_as, member

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parent.parent.parent / "templates"


def cron(expression: str, tz: str = "UTC") -> dict:
    return {"kind": "cron", "expression": expression, "tz": tz}


def builder_fields(spec: dict, prefix: str = "t") -> dict[str, str]:
    """The builder's form fields for a spec, as the browser posts them."""
    if spec["kind"] == "compound":
        fields = {f"{prefix}-kind": spec["mode"], f"{prefix}-count": str(len(spec["children"]))}
        for i, child in enumerate(spec["children"]):
            fields.update(builder_fields(child, f"{prefix}-{i}"))
        return fields
    return {f"{prefix}-kind": "cron", f"{prefix}-expression": spec["expression"],
            f"{prefix}-tz": spec.get("tz", "UTC")}  # fmt: skip


def create_form(**fields: str) -> dict[str, str]:
    """The create page's fields, builder fields included."""
    return {"code": "odd", "task_name": "test.echo", "kwargs": "{}", "max_attempts": "1",
            "retry_delay": "10", "max_instances": "1", "overlap": "skip", "misfire": "skip",
            "misfire_grace": "60", "priority": "0", **fields}  # fmt: skip


def nested_all(depth: int) -> dict:
    """The review's CPU bomb: `all` compounds nested, whose children never meet."""
    spec = cron("0 9 * * MON", "Europe/Berlin")
    for _ in range(depth):
        spec = {"kind": "compound", "mode": "all",
                "children": [spec, cron("0 9 * * TUE", "Europe/Berlin")]}  # fmt: skip
    return spec


# ------------------------------------------------------------ bounded cost


def test_nested_all_compounds_in_the_preview_are_refused_within_the_search_budget(
    client, steps, settings
) -> None:
    login_as(client, "viewer")
    response = client.post("/schedules/preview/", builder_fields(nested_all(6)), **HX)
    assert response.status_code == 200
    assert "cannot be decided within the search budget" in response.content.decode()
    # The work is bounded by the budget (one parse), not multiplied by the nesting.
    assert steps[0] <= 2_000 + 20


def test_the_998_field_builder_request_is_refused_before_it_is_read(client) -> None:
    login_as(client, "viewer")
    fields = {"t-kind": "all", "t-count": "20"}
    for i in range(498):
        fields[f"t-{i}-kind"] = "any"
        fields[f"t-{i}-count"] = "20"
    response = client.post("/schedules/trigger-editor/", fields, **HX)
    assert response.status_code == 400
    assert len(response.content) < 1_000


def test_a_builder_request_under_the_field_limit_stays_small(client, steps) -> None:
    login_as(client, "viewer")
    fields = {"t-kind": "all", "t-count": "20"}
    for i in range(20):
        fields[f"t-{i}-kind"] = "any"
        fields[f"t-{i}-count"] = "20"
    response = client.post("/schedules/trigger-editor/", fields, **HX)
    assert response.status_code == 200
    assert len(response.content) < 200_000
    assert "more than 50 parts" in response.content.decode()
    assert response.content.decode().count("<fieldset") <= 51


@pytest.mark.django_db(transaction=True)
def test_resume_computes_the_next_slot_before_taking_the_write_lock(monkeypatch) -> None:
    schedule = make_schedule("costly", "test.echo", every(60))
    services.schedule_pause(schedule=schedule)
    seen = []
    original = services.next_slot

    def watching(*args, **kwargs):
        seen.append(connection.in_atomic_block)
        return original(*args, **kwargs)

    monkeypatch.setattr(services, "next_slot", watching)
    services.schedule_resume(schedule=schedule)
    assert seen == [False]


# ------------------------------------------------------------ the admin


def admin_post(client, path: str, **fields) -> object:
    data = {"code": "adm", "task_name": "test.echo", "trigger": json.dumps(every(60)),
            "kwargs": "{}", "tz": "UTC", "timeout": "", "max_attempts": "1",
            "retry_delay": "10", "max_instances": "1", "overlap": "skip", "misfire": "skip",
            "misfire_grace": "60", "priority": "0", "dispatch": "inline", **fields}  # fmt: skip
    return client.post(path, data)


def test_the_admin_refuses_a_never_firing_trigger(admin_client) -> None:
    response = admin_post(
        admin_client, "/admin/schedules/schedule/add/", trigger=json.dumps(cron("0 0 30 2 *"))
    )
    assert response.status_code == 200
    assert "never fires" in response.content.decode()
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_attempts": "100000"}, "must be from 1 to 100"),
        ({"max_instances": "0"}, "must be from 1 to 1000"),
        ({"priority": "99999999999"}, "must be from -1000000 to 1000000"),
        ({"task_name": "nope"}, "nope"),
        ({"rate_limit": "1", "rate_period": "0"}, "must be from 0.001 to 31536000"),
        ({"rate_limit": "0"}, "must be from 1 to 1000000"),
    ],
)
def test_the_admin_refuses_what_every_other_path_refuses(admin_client, fields, message) -> None:
    """The admin saved these, and the next `schedules import` of an export refused them."""
    response = admin_post(admin_client, "/admin/schedules/schedule/add/", **fields)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Schedule.objects.exists()


def test_the_admin_saves_through_the_services_and_recomputes_the_next_run(admin_client) -> None:
    response = admin_post(admin_client, "/admin/schedules/schedule/add/")
    assert response.status_code == 302
    schedule = Schedule.objects.get(code="adm")
    assert schedule.next_run_at is not None and schedule.trigger["seed"] == "adm"
    before = schedule.next_run_at
    response = admin_post(
        admin_client,
        f"/admin/schedules/schedule/{schedule.pk}/change/",
        trigger=json.dumps(cron("0 3 * * *")),
    )
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.next_run_at != before and schedule.next_run_at.hour == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ('{"x": NaN}', "NaN is not allowed"),
        ('{"x": ' + "9" * 5000 + "}", "not valid JSON"),
        ('{"x": "\\ud800"}', "lone surrogate"),
        ('{"nope": 1}', "does not fit"),
    ],
)
def test_the_admin_refuses_kwargs_that_break_the_rules(admin_client, kwargs, message) -> None:
    response = admin_post(admin_client, "/admin/schedules/schedule/add/", kwargs=kwargs,
                          task_name="test.fail")  # fmt: skip
    assert response.status_code == 200
    assert message in response.content.decode()


# ------------------------------------------------------------ 500s


@pytest.mark.parametrize(
    "spec",
    [
        cron("0 ² * * *"),
        cron("0 " + "9" * 5000 + " * * *"),
        {"kind": "interval", "every": 10**5000},
        {"kind": "interval", "every": 1e308},
        {"kind": "date", "at": "0001-01-01T00:00:00+05:00"},
        {"kind": "date", "at": "9999-12-31T23:59:00-05:00"},
        # In range in UTC, but not in a zone east of it: the list page overflowed there.
        {"kind": "date", "at": "9999-12-31T23:30:00Z"},
        {"kind": "interval", "every": 60, "anchor": "0001-01-01T01:00:00Z"},
        {"kind": "interval", "every": 60, "seed": "\ud800"},
        {"kind": "cron", "expression": "* * * * *", "tz": "Europe"},
    ],
)
def test_odd_triggers_are_field_errors_in_preview_builder_and_create(client, spec) -> None:
    login_as(client, "owner")
    fields = builder_fields(spec) if spec["kind"] == "cron" else {}
    if spec["kind"] != "cron":
        # The builder only posts cron, interval and date fields; the spec paths get the rest.
        with pytest.raises(services.InvalidTrigger):
            services.schedule_create(code="odd", task_name="test.echo", trigger=spec)
        return
    for path in ("/schedules/preview/", "/schedules/trigger-editor/"):
        assert client.post(path, fields, **HX).status_code == 200
    form = create_form(**fields)
    response = client.post("/schedules/new/", form)
    assert response.status_code == 422
    assert not Schedule.objects.exists()


def test_the_latest_date_a_trigger_takes_shows_in_the_zones_at_both_ends(client) -> None:
    services.schedule_create(
        code="far", task_name="test.echo", trigger={"kind": "date", "at": "9999-12-30T23:00:00Z"}
    )
    login_as(client, "owner")
    for zone in ("Pacific/Kiritimati", "Etc/GMT+12"):  # UTC+14 and UTC-12
        client.cookies["tz"] = zone
        response = client.get("/")
        assert response.status_code == 200
        assert "far" in response.content.decode()


def test_a_date_stored_before_the_range_check_still_lists_in_every_zone(client) -> None:
    """A record saved before the last day of year 9999 was refused (or written by hand):
    east of UTC its fire time has no local date. The pages show it as they can."""
    far = services.schedule_create(
        code="far", task_name="test.echo", trigger={"kind": "date", "at": "9999-12-30T23:00:00Z"}
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE schedules_schedule SET trigger = %s WHERE id = %s",
            [json.dumps({"kind": "date", "at": "9999-12-31T23:30:00+00:00"}), far.pk],
        )
    Schedule.objects.filter(pk=far.pk).update(
        next_run_at=datetime(9999, 12, 31, 23, 30, tzinfo=UTC)
    )
    login_as(client, "owner")
    for zone in ("Pacific/Kiritimati", "Etc/GMT+12", "UTC"):
        client.cookies["tz"] = zone
        for path in ("/", f"/schedules/{far.pk}/"):
            response = client.get(path)
            assert response.status_code == 200, (zone, path)
            assert "far" in response.content.decode()


@pytest.mark.parametrize(
    "spec",
    [
        json.dumps(cron("0 ² * * *")),
        '{"kind": "interval", "every": ' + "9" * 5000 + "}",
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"kind": "date", "at": "0001-01-01T00:00:00+05:00"}),
    ],
)
def test_cli_preview_spec_refuses_odd_specs_with_one_line(spec) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("schedules", "preview", "--spec", spec)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 500


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"x": NaN}', "NaN is not allowed"),
        ('{"x": Infinity}', "Infinity is not allowed"),
        ("[" * 100_000 + "]" * 100_000, "over the limit"),
        ('{"x": ' + "[" * 40 + "]" * 40 + "}", "nested deeper than 32"),
        ('{"x": ' + "9" * 5000 + "}", "not valid JSON"),
        ('{"x": 18446744073709551616}', "integer out of range"),
        ('{"x": "\\ud800"}', "lone surrogate"),
        ('{"x": "a\\u0000b"}', "NUL"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_odd_kwargs_are_a_field_error_on_create(client, text, message) -> None:
    login_as(client, "owner")
    form = create_form(kwargs=text, **builder_fields(cron("0 3 * * *")))
    response = client.post("/schedules/new/", form)
    assert response.status_code == 422
    assert message in response.content.decode()


def test_a_lone_surrogate_stored_in_kwargs_no_longer_breaks_its_pages(client) -> None:
    schedule = make_schedule("odd", "test.echo", every(60))
    # As a manual edit or a bad migration would (PostgreSQL's jsonb refuses surrogates).
    odd = '"\\ud800"' if connection.vendor == "sqlite" else '"fine"'
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE schedules_schedule SET kwargs = %s WHERE id = %s",
            ['{"x": ' + odd + ', "n": ' + "7" * 5000 + "}", schedule.pk],
        )
    login_as(client, "owner")
    for path in ("/", f"/schedules/{schedule.pk}/", f"/schedules/{schedule.pk}/edit/"):
        response = client.get(path)
        assert response.status_code == 200, path
    assert "KWARGS" in client.get("/").content.decode()
    change = client.get(f"/admin/schedules/schedule/{schedule.pk}/change/")
    assert change.status_code == 200
    if connection.vendor == "sqlite":
        assert "\\ud800" in change.content.decode()


@pytest.mark.parametrize(
    "selected", ["²", "9" * 30, "99999999999999999999", "-1", "0", "1e3", "١٢"]
)
def test_odd_ids_in_bulk_actions_are_ignored(client, selected) -> None:
    login_as(client, "operator")
    response = client.post("/schedules/bulk/", {"action": "pause", "selected": [selected]})
    assert response.status_code == 302


@pytest.mark.parametrize("value", ["²", "9" * 30, "99999999999999999999", "%ff"])
def test_odd_ids_in_the_live_log_and_pagination_are_ignored(client, value) -> None:
    schedule = make_schedule("a", "test.echo", every(60))
    login_as(client, "viewer")
    assert client.get(f"/live/?schedule={value}").status_code == 200
    assert client.get(f"/?page={value}").status_code == 200
    assert client.get(f"/schedules/{schedule.pk}/?page={value}").status_code == 200
    assert client.get(f"/schedules/{schedule.pk}/?page={value}", **HX).status_code == 200


def test_an_id_beyond_the_database_integers_is_404(client) -> None:
    login_as(client, "owner")
    assert client.get(f"/schedules/{10**30}/").status_code == 404
    assert client.post(f"/schedules/{10**30}/pause/").status_code == 404


@pytest.mark.parametrize("zone", ["Europe", "America", "../../etc/passwd", "Etc/", "x" * 300])
def test_a_tz_cookie_that_is_not_a_zone_is_ignored_on_every_page(client, zone) -> None:
    client.cookies["tz"] = zone
    assert client.get("/login/").status_code == 200
    assert client.get("/health/").status_code in (200, 503)
    login_as(client, "viewer")
    assert client.get("/").status_code == 200


def test_a_non_ascii_authorization_header_on_metrics_is_401(client, settings) -> None:
    settings.SILLO_METRICS = "token"
    settings.SILLO_METRICS_TOKEN = "a-long-enough-token"
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer é")
    assert response.status_code == 401


# ------------------------------------------------------------ unbounded text


def test_error_and_traceback_are_capped_when_stored_keeping_head_and_tail(settings) -> None:
    settings.SILLO_ERROR_MAX_CHARS = 1_000
    settings.SILLO_TRACEBACK_MAX_CHARS = 2_000
    schedule = make_schedule("loud", "test.fail", every(60))
    run = Run.objects.create(schedule=schedule, schedule_code="loud", task_name="test.fail",
                             reason="scheduled", status=RunStatus.RUNNING)  # fmt: skip
    run.schedule = schedule
    huge_error = "HEAD" + "e" * 2_000_000 + "TAIL"
    huge_tb = "Traceback" + "t" * 2_000_000 + "RuntimeError"
    outcome = {"status": RunStatus.FAILED, "error": huge_error, "traceback": huge_tb,
               "result": None, "retry_in": None}  # fmt: skip
    outcomes.finish_runs(items=[(run, outcome)], now=schedule.created_at)
    run.refresh_from_db()
    schedule.refresh_from_db()
    assert len(run.error) <= 1_000 and run.error.startswith("HEAD") and run.error.endswith("TAIL")
    assert "characters cut" in run.error
    assert len(run.traceback) <= 2_000 and run.traceback.endswith("RuntimeError")
    assert len(schedule.last_error) <= 1_000


def test_old_huge_errors_are_capped_when_rendered_and_broadcast(client, settings) -> None:
    from schedules.events import RunEvent

    settings.SILLO_ERROR_MAX_CHARS = 1_000
    schedule = make_schedule("loud", "test.fail", every(60))
    run = Run.objects.create(schedule=schedule, schedule_code="loud", task_name="test.fail",
                             reason="scheduled", status=RunStatus.FAILED,
                             error="x" * 2_000_000, traceback="y" * 2_000_000)  # fmt: skip
    assert len(RunEvent.from_run(run).error) <= 1_000
    login_as(client, "viewer")
    assert len(client.get("/live/").content) < 100_000
    assert len(client.get(f"/schedules/{schedule.pk}/").content) < 200_000


# ------------------------------------------------------------ deployment


def test_login_is_throttled_on_the_dashboard_and_says_for_how_long(client, settings) -> None:
    member("alice")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/login/", {"username": "alice", "password": "a-long-test-password"})
    assert response.status_code == 429
    assert "Too many failed login attempts: try again in 15 minutes." in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_login_is_throttled_on_the_admin_too(client, settings) -> None:
    member("root", is_staff=True, is_superuser=True)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/admin/login/", {"username": "root", "password": "wrong"})
    response = client.post(
        "/admin/login/", {"username": "root", "password": "a-long-test-password"}
    )
    assert response.status_code == 429
    assert "Too many failed login attempts" in response.content.decode()


def test_a_content_security_policy_is_sent_and_templates_have_no_inline_code(client) -> None:
    login_as(client, "viewer")
    policy = client.get("/")["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text()
        assert not re.search(r"\son[a-z]+\s*=", text), template
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), template


def test_kwargs_that_no_longer_fit_are_flagged_and_warned_by_check(client) -> None:
    schedule = make_schedule("unfit", "test.fail", every(60))
    Schedule.objects.filter(pk=schedule.pk).update(kwargs={"old_name": 1})
    login_as(client, "viewer")
    listing = client.get("/?flag=kwargs").content.decode()
    assert "unfit" in listing and "old_name" in listing
    from schedules.checks import check_stored_kwargs

    warnings = check_stored_kwargs()
    assert [w.id for w in warnings] == ["schedules.W004"]
    assert "unfit" in warnings[0].msg


def test_the_cli_lists_invalid_schedules_with_the_reason(capsys) -> None:
    schedule = make_schedule("bad", "test.echo", every(60))
    Schedule.objects.filter(pk=schedule.pk).update(trigger=cron("0 ² * * *"))
    make_schedule("good", "test.echo", every(60))
    call_command("schedules", "list", "--flag", "invalid", "--json")
    rows = json.loads(capsys.readouterr().out)
    assert [row["code"] for row in rows] == ["bad"]
    assert "hour '²' is not a number" in rows[0]["description"]


def test_a_costly_stored_trigger_costs_a_bounded_search_on_each_page_view(client, steps) -> None:
    schedule = make_schedule("costly", "test.echo", every(60))
    # Saved before the limits existed (or straight into the database): deeper than allowed.
    Schedule.objects.filter(pk=schedule.pk).update(trigger=nested_all(12))
    login_as(client, "viewer")
    for path in (f"/schedules/{schedule.pk}/", "/"):
        steps[0] = 0
        response = client.get(path)
        assert response.status_code == 200
        assert steps[0] <= 2_000
    assert "nest deeper than 8" in client.get(f"/schedules/{schedule.pk}/").content.decode()
