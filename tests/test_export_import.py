"""Exports: the run log as JSON Lines and CSV (page and CLI), schedules as JSON, and import."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.core.management.base import CommandError
from django.utils import timezone

from schedules import transfer
from schedules.models import AuditEvent, Run, RunStatus, Schedule
from schedules.run_log import COLUMNS, csv_value
from tests.dashboard.conftest import member
from tests.factories import cli, every, make_schedule

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(db):
    alpha = make_schedule("alpha", "test.echo", every(60))
    beta = make_schedule("beta", "test.fail", every(60))
    now = timezone.now()
    made = []
    for i in range(6):
        made.append(Run.objects.create(
            schedule=alpha if i % 2 else beta, schedule_code="alpha" if i % 2 else "beta",
            task_name="test.echo" if i % 2 else "test.fail", reason="scheduled",
            status=RunStatus.SUCCEEDED if i % 2 else RunStatus.FAILED,
            error="" if i % 2 else f'=HYPERLINK("x") failed, "quoted", line\nbreak {i}',
            kwargs={"n": i, "text": "é"}, result={"ok": i} if i % 2 else None,
            queued_at=now - timedelta(minutes=i), started_at=now - timedelta(minutes=i),
            finished_at=now - timedelta(minutes=i) + timedelta(seconds=1.5),
        ))  # fmt: skip
    return made


def expected(run: Run) -> dict:
    return {
        "id": run.pk, "code": run.schedule_code, "status": run.status, "error": run.error or None,
        "kwargs": run.kwargs, "result": run.result, "duration_ms": 1500,
        "queued_at": run.queued_at.isoformat(),
    }  # fmt: skip


def subset(row: dict) -> dict:
    return {key: row[key] for key in ("id", "code", "status", "error", "kwargs", "result",
                                      "duration_ms", "queued_at")}  # fmt: skip


def test_the_runs_page_exports_its_filter_as_json_lines(client, runs) -> None:
    client.force_login(member("viewer", "Viewers"))
    response = client.get("/runs/export.jsonl?status=failed")
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"].startswith('attachment; filename="runs-')
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    failed = [r for r in runs if r.status == RunStatus.FAILED]
    assert [subset(row) for row in rows] == [expected(r) for r in failed]  # newest first
    assert list(rows[0]) == list(COLUMNS)


def test_the_runs_page_exports_csv_that_reads_back(client, runs) -> None:
    client.force_login(member("viewer", "Viewers"))
    response = client.get("/runs/export.csv")
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 6
    for row, run in zip(rows, runs, strict=True):
        assert int(row["id"]) == run.pk
        assert csv_value(row["error"]) == run.error
        assert json.loads(row["kwargs"]) == run.kwargs
        assert (json.loads(row["result"]) if row["result"] else None) == run.result
    # A spreadsheet shows the error instead of running it.
    assert rows[0]["error"].startswith("'=HYPERLINK")


def test_the_export_needs_the_view_permission_and_a_known_format(client, runs) -> None:
    client.force_login(member("stranger"))
    assert client.get("/runs/export.jsonl").status_code == 403
    client.force_login(member("viewer", "Viewers"))
    assert client.get("/runs/export.xml").status_code == 404


def test_the_runs_page_links_its_filter_to_the_export(client, runs) -> None:
    client.force_login(member("viewer", "Viewers"))
    html = client.get("/runs/?status=failed&task=test.fail").content.decode()
    assert "/runs/export.jsonl?status=failed&amp;task=test.fail" in html
    assert "/runs/export.csv?status=failed&amp;task=test.fail" in html


def test_cli_runs_streams_json_lines_and_csv_with_filters(runs) -> None:
    rows = [json.loads(line) for line in cli("runs", "--format", "jsonl").splitlines()]
    assert [subset(r) for r in rows] == [expected(r) for r in runs]
    only_alpha = [json.loads(x) for x in cli("runs", "alpha", "--format", "jsonl").splitlines()]
    assert {r["code"] for r in only_alpha} == {"alpha"}
    errors = cli("runs", "--status", "errors", "--search", "HYPERLINK", "--format", "csv")
    assert len(list(csv.DictReader(io.StringIO(errors)))) == 3
    assert len(cli("runs", "--limit", "2").splitlines()) == 2
    assert len(json.loads(cli("runs", "--json"))) == 6


def test_cli_runs_refuses_a_bad_filter_in_one_line(runs) -> None:
    with pytest.raises(CommandError, match="since: not a date and time") as info:
        cli("runs", "--since", "yesterday")
    assert info.value.returncode == 2


# ---------------------------------------------------------------- schedules


def test_export_then_import_recreates_a_deployment(tmp_path, runs) -> None:
    Schedule.objects.filter(code="beta").update(status="paused")
    path = tmp_path / "schedules.json"
    assert "2 schedule(s) written" in cli("export", "--output", str(path))
    document = json.loads(path.read_text())
    assert sorted(document["schedules"]) == ["alpha", "beta"]
    assert document["schedules"]["alpha"]["trigger"]["every"] == 60
    assert document["schedules"]["alpha"]["task_name"] == "test.echo"
    Schedule.objects.all().delete()
    before = Run.objects.count()
    preview = cli("import", str(path), "--dry-run")
    assert "+ alpha (test.echo)" in preview and "+ beta (test.fail)" in preview
    assert "2 to create, 0 to change, 0 unchanged" in preview
    assert Schedule.objects.count() == 0  # a dry run changes nothing
    cli("import", str(path))
    assert {s.code: s.status for s in Schedule.objects.all()} == {
        "alpha": "active",
        "beta": "paused",
    }
    assert Run.objects.count() == before  # runs are never touched
    assert "0 to create, 0 to change, 2 unchanged" in cli("import", str(path), "--dry-run")


def test_import_shows_each_changed_field_and_applies_it_audited(tmp_path, runs) -> None:
    document = transfer.export_schedules()
    document["schedules"]["alpha"]["kwargs"] = {"region": "us"}
    document["schedules"]["alpha"]["max_attempts"] = 3
    document["schedules"]["beta"]["status"] = "paused"
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(document))
    preview = cli("import", str(path), "--dry-run")
    assert "~ alpha" in preview
    assert "    kwargs: {} -> {'region': 'us'}" in preview
    assert "    max_attempts: 1 -> 3" in preview
    assert "    status: 'active' -> 'paused'" in preview
    cli("import", str(path))
    alpha = Schedule.objects.get(code="alpha")
    assert (alpha.kwargs, alpha.max_attempts) == ({"region": "us"}, 3)
    assert Schedule.objects.get(code="beta").status == "paused"
    assert AuditEvent.objects.filter(action="edit", via="cli", schedule_code="alpha").exists()
    assert AuditEvent.objects.filter(action="pause", via="cli", schedule_code="beta").exists()


def test_import_refuses_unknown_tasks_with_the_reason_and_changes_nothing(tmp_path, runs) -> None:
    document = transfer.export_schedules()
    document["schedules"]["new-one"] = {"task_name": "no.such.task", "trigger": every(60)}
    document["schedules"]["alpha"]["kwargs"] = {"region": "us"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CommandError, match="new-one: task_name: .*no.such.task") as info:
        cli("import", str(path))
    assert info.value.returncode == 2
    assert not Schedule.objects.filter(code="new-one").exists()
    assert Schedule.objects.get(code="alpha").kwargs == {}


def doc(**entries: dict) -> dict:
    return {"format": "sillo-dash/schedules", "version": 1, "schedules": entries}


NEVER = {"kind": "cron", "expression": "0 0 30 2 *"}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"schedules": {}}, "not a schedules export"),
        ({**doc(), "version": 9}, "unsupported version"),
        (doc(**{"a b": {}}), "not a valid code"),
        (doc(x={"task_name": "test.echo", "trigger": NEVER}), "x: trigger: "),
        (doc(x={"task_name": "test.echo", "trigger": every(60), "colour": "red"}), "unknown field"),
        (
            doc(x={"task_name": "test.echo", "trigger": every(60), "status": "completed"}),
            "cannot be imported",
        ),
    ],
)
def test_import_refusals_name_the_problem(tmp_path, document, message) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CommandError, match=message):
        cli("import", str(path))
    assert Schedule.objects.count() == 0


def test_import_of_a_missing_or_broken_file_is_one_line(tmp_path) -> None:
    with pytest.raises(CommandError, match="cannot read"):
        cli("import", str(tmp_path / "nope.json"))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(CommandError, match="is not JSON"):
        cli("import", str(broken))


@pytest.mark.django_db(transaction=True)
async def test_under_asgi_the_export_is_an_async_stream(async_client) -> None:
    viewer = await sync_to_async(member)("viewer", "Viewers")
    schedule = await sync_to_async(make_schedule)("alpha", "test.echo", every(60))
    for _ in range(1200):  # more than one batch
        await sync_to_async(Run.objects.create)(
            schedule=schedule, schedule_code="alpha", task_name="test.echo", reason="manual"
        )
    await async_client.aforce_login(viewer)
    response = await async_client.get("/runs/export.jsonl")
    assert response.is_async
    chunks = [chunk async for chunk in response.streaming_content]
    assert len(chunks) == 3
    assert sum(chunk.count(b"\n") for chunk in chunks) == 1200


def test_a_chain_survives_export_and_import_whatever_the_order_of_its_schedules(tmp_path) -> None:
    """An export lists schedules by code; a follow-up later in the file than the one
    naming it must not make the import (or its dry run) refuse the chain."""
    from schedules import services

    services.schedule_create(code="zeta", task_name="test.echo", trigger=every(60))
    services.schedule_create(code="alpha", task_name="test.echo", trigger=every(60),
                             then=["zeta"], catch=["zeta"])  # fmt: skip
    path = tmp_path / "chain.json"
    cli("export", "--output", str(path))
    Schedule.objects.all().delete()

    assert "2 to create" in cli("import", str(path), "--dry-run")
    cli("import", str(path))

    alpha = Schedule.objects.get(code="alpha")
    assert (alpha.then, alpha.catch) == (["zeta"], ["zeta"])


@pytest.mark.parametrize(
    ("links", "problem"),
    [
        ({"alpha": ["nope"]}, "alpha: then: no schedule 'nope'"),
        ({"alpha": ["beta"], "beta": ["alpha"]}, "a cycle: alpha then beta then alpha"),
    ],
)
def test_a_dry_run_refuses_the_chains_the_import_would_refuse(tmp_path, links, problem) -> None:
    document = {"format": transfer.FORMAT, "version": transfer.VERSION, "schedules": {
        code: {"task_name": "test.echo", "trigger": every(60), "then": then}
        for code, then in links.items()
    }}  # fmt: skip
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))

    for extra in (["--dry-run"], []):
        with pytest.raises(CommandError) as refused:
            cli("import", str(path), *extra)
        assert refused.value.returncode == 2
        assert "import refused, nothing changed" in str(refused.value)
        assert problem in str(refused.value)
    assert not Schedule.objects.exists()


def test_an_unchanged_export_imports_again_after_a_follow_up_was_deleted(tmp_path) -> None:
    make_schedule("load", "test.echo", every(60))
    make_schedule("extract", "test.echo", every(60), then=["load"])
    path = tmp_path / "schedules.json"
    cli("export", "--output", str(path))
    cli("delete", "load")
    document = json.loads(path.read_text())
    del document["schedules"]["load"]
    path.write_text(json.dumps(document))

    cli("import", str(path))

    assert Schedule.objects.get(code="extract").then == ["load"]
    document["schedules"]["extract"]["catch"] = ["load"]  # named anew, in the other field
    path.write_text(json.dumps(document))
    with pytest.raises(CommandError) as refused:
        cli("import", str(path))
    assert "extract: catch: no schedule 'load'" in str(refused.value)


def test_result_as_is_checked_against_a_follow_up_the_file_creates(tmp_path) -> None:
    """test.fail takes only `message`: a follow-up it would receive `data` in cannot run."""
    entries = {
        "alpha": {"task_name": "test.echo", "trigger": every(60), "then": ["beta"],
                  "result_as": "data"},
        "beta": {"task_name": "test.fail", "trigger": every(60)},
    }  # fmt: skip
    path = tmp_path / "result_as.json"
    document = {"format": transfer.FORMAT, "version": transfer.VERSION, "schedules": entries}
    path.write_text(json.dumps(document))

    with pytest.raises(CommandError) as refused:
        cli("import", str(path), "--dry-run")
    assert "alpha: result_as: beta (test.fail) does not take data" in str(refused.value)

    entries["beta"]["task_name"] = "test.echo"  # takes any keyword
    path.write_text(json.dumps(document))
    cli("import", str(path))
    assert Schedule.objects.get(code="alpha").result_as == "data"
