"""`manage.py schedules list|show|pause|resume|cancel|run|runs`."""

from __future__ import annotations

import json
import time

import pytest
from django.core.management.base import CommandError

from schedules.models import Run, RunStatus, Schedule
from tests.factories import cli, every, make_schedule

pytestmark = pytest.mark.django_db(transaction=True)


def test_list_json_carries_the_fields_operators_script_against() -> None:
    make_schedule("nightly", "test.echo", {"kind": "cron", "expression": "0 3 * * *"})
    make_schedule("ghost", "no.such.task", every(60))
    rows = json.loads(cli("list", "--json"))
    by_code = {row["code"]: row for row in rows}
    nightly = by_code["nightly"]
    for key in (
        "code", "task_name", "status", "trigger", "description", "next_run_at",
        "last_run_at", "last_outcome", "runs", "errors", "flags",
    ):  # fmt: skip
        assert key in nightly
    assert nightly["description"] == "At 03:00, UTC"
    assert nightly["next_run_at"].endswith("+00:00")
    assert by_code["ghost"]["flags"] == ["orphan"]


def test_list_filters_by_status_and_flag() -> None:
    make_schedule("a", "test.echo", every(60))
    make_schedule("ghost", "no.such.task", every(60))
    cli("pause", "a")
    assert [r["code"] for r in json.loads(cli("list", "--json", "--status", "paused"))] == ["a"]
    assert [r["code"] for r in json.loads(cli("list", "--json", "--flag", "orphan"))] == ["ghost"]
    assert "[ORPHAN]" in cli("list")


def test_list_columns_never_run_into_each_other() -> None:
    long_code = "a-schedule-code-longer-than-thirty-characters"
    make_schedule(long_code, "test.echo", every(60))
    make_schedule("b", "test.echo", {"kind": "cron", "expression": "0 3 * * *"})
    Schedule.objects.filter(code="b").update(last_outcome=RunStatus.INTERRUPTED)
    lines = {line.split()[0]: line for line in cli("list").splitlines()}
    assert lines[long_code].startswith(f"{long_code}  active")
    assert "interrupted  At 03:00, UTC" in lines["b"]
    # Each column starts at the same place on every line.
    starts = {line.index("next ") for line in lines.values()}
    assert len(starts) == 1


def test_show_includes_the_next_fire_times() -> None:
    make_schedule(
        "nightly",
        "test.echo",
        {"kind": "cron", "expression": "0 3 * * *", "tz": "Europe/Berlin"},
        tz="Europe/Berlin",
    )
    data = json.loads(cli("show", "nightly", "--json"))
    assert len(data["next_fire_times"]) == 10
    assert all("T03:00:00+0" in t for t in data["next_fire_times"])


def test_pause_resume_cancel() -> None:
    make_schedule("a", "test.echo", every(60))
    assert cli("pause", "a").strip() == "a is paused"
    assert json.loads(cli("resume", "a", "--json"))["status"] == "active"
    assert cli("cancel", "a").strip() == "a is cancelled"
    with pytest.raises(CommandError, match="cannot resume schedule 'a': it is cancelled") as info:
        cli("resume", "a")
    assert info.value.returncode == 2


def test_unknown_code() -> None:
    with pytest.raises(CommandError, match="no schedule with code 'nope'"):
        cli("pause", "nope")


def test_run_inline_executes_in_the_cli_process() -> None:
    make_schedule("a", "test.echo", every(3600), kwargs={"x": [1, {"y": "ü"}]})
    data = json.loads(cli("run", "a", "--inline", "--json"))
    assert data["status"] == "succeeded"
    assert data["reason"] == "manual"
    assert data["result"] == {"x": [1, {"y": "ü"}]}
    assert isinstance(data["duration_ms"], int)


def test_run_inline_is_the_cli_s_own_run_even_beside_a_live_scheduler(monkeypatch) -> None:
    """A scheduler up at the same time claimed the run before the CLI did, and the CLI
    printed `running` and exited 0 before the run ended (a fresh-user trial)."""
    from django.utils import timezone

    from schedules.management.commands import schedules as command
    from schedules.registry import registry
    from schedules.scheduler import queued

    taken_by_others = []
    run_inline = command.process.run_inline

    async def after_another_scheduler_looked(run_id: int) -> None:
        def other_pass() -> None:
            runs, _ = queued.claim_queued(
                now=timezone.now(), instance_id="other", tasks=registry, limit=10,
                local_in_flight={},
            )  # fmt: skip
            taken_by_others.extend(runs)

        from asgiref.sync import sync_to_async

        await sync_to_async(other_pass)()
        await run_inline(run_id)

    monkeypatch.setattr(command.process, "run_inline", after_another_scheduler_looked)
    make_schedule("a", "test.echo", every(3600))
    data = json.loads(cli("run", "a", "--inline", "--json"))
    assert taken_by_others == []
    assert data["status"] == "succeeded"
    assert Run.objects.get().scheduler != "other"


def test_run_inline_of_a_failing_task_exits_non_zero() -> None:
    make_schedule("f", "test.fail", every(3600))
    with pytest.raises(CommandError, match=r"run #\d+ ended failed"):
        cli("run", "f", "--inline")
    assert Run.objects.get().status == RunStatus.FAILED


def test_run_without_a_scheduler_stays_queued_and_wait_says_so() -> None:
    make_schedule("a", "test.echo", every(3600))
    assert "queued" in cli("run", "a")
    with pytest.raises(CommandError, match="no scheduler is running"):
        cli("run", "a", "--wait")
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.QUEUED}


def test_run_is_refused_for_orphans() -> None:
    make_schedule("ghost", "no.such.task", every(60))
    with pytest.raises(CommandError, match=r"not declared \(orphan\)"):
        cli("run", "ghost")
    assert not Run.objects.exists()


def test_runs_json_fields() -> None:
    make_schedule("a", "test.echo", every(3600))
    cli("run", "a", "--inline")
    (row,) = json.loads(cli("runs", "a", "--json"))
    for key in (
        "id", "code", "task_name", "status", "reason", "attempt", "slot",
        "started_at", "finished_at", "duration_ms", "error",
    ):  # fmt: skip
        assert key in row
    assert row["started_at"].endswith("+00:00")
    assert Schedule.objects.get().run_count == 1


def test_bad_cli_input_is_one_line_and_non_zero(manage) -> None:
    env = {"DJANGO_SETTINGS_MODULE": "tests.settings"}
    unmigrated = manage("schedules", "list", env=env)
    assert unmigrated.returncode == 1
    assert unmigrated.stderr.startswith("CommandError: database error: no such table")
    assert manage("migrate", env=env).returncode == 0
    for args in (["pause", "nope"], ["runs", "--limit", "0"], ["list", "--status", "asleep"]):
        result = manage("schedules", *args, env=env)
        assert result.returncode != 0
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


def test_cancel_run_stops_a_queued_run_and_records_the_os_user() -> None:
    schedule = make_schedule("nightly", "test.echo", every(3600))
    run = Run.objects.create(
        schedule=schedule, schedule_code="nightly", task_name="test.echo", reason="manual"
    )
    assert cli("cancel-run", str(run.pk)).strip() == f"run #{run.pk} cancelled"
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert run.cancelled_by.startswith("cli")
    with pytest.raises(CommandError, match=rf"run #{run.pk} already ended \(cancelled\)"):
        cli("cancel-run", str(run.pk))
    with pytest.raises(CommandError, match="no run #999999"):
        cli("cancel-run", "999999")


def test_drop_queued_cancels_every_queued_run_of_the_schedule_only() -> None:
    mine = make_schedule("mine", "test.echo", every(3600))
    other = make_schedule("other", "test.echo", every(3600))
    for schedule in (mine, mine, other):
        Run.objects.create(
            schedule=schedule, schedule_code=schedule.code, task_name="test.echo", reason="retry"
        )
    data = json.loads(cli("drop-queued", "mine", "--json"))
    assert data == {"code": "mine", "dropped": 2}
    statuses = dict(
        Run.objects.values_list("schedule_code", "status").filter(schedule_code="other")
    )
    assert statuses == {"other": RunStatus.QUEUED}
    assert set(Run.objects.filter(schedule_code="mine").values_list("status", flat=True)) == {
        RunStatus.CANCELLED
    }


def test_stats_counts_jobs_and_says_how_the_backlog_is() -> None:
    from datetime import timedelta

    from django.utils import timezone

    from schedules.models import SchedulerInstance

    make_schedule("a", "test.echo", every(60))
    paused = make_schedule("b", "test.echo", every(60))
    paused.status = "paused"
    paused.save()
    # The factory's slots are at its fixed T0, long past: this one's is next minute.
    Schedule.objects.update(next_run_at=timezone.now() + timedelta(seconds=60))
    data = json.loads(cli("stats", "--json"))
    assert data["jobs"] == {"total": 2, "active": 1, "paused": 1, "cancelled": 0, "completed": 0}
    assert data["queue"] == {
        "queued": 0,
        "due": 0,
        "oldest_due_age_seconds": 0.0,
        "oldest_slot_late_seconds": 0.0,
        "backlog": "HEALTHY",
    }
    SchedulerInstance.objects.create(id="s", host="h", pid=1, heartbeat_at=timezone.now())
    Run.objects.create(
        schedule=paused, schedule_code="b", task_name="test.echo", reason="manual",
        not_before=timezone.now() - timedelta(seconds=90),
    )  # fmt: skip
    assert json.loads(cli("stats", "--json"))["queue"]["backlog"] == "DEGRADED"
    SchedulerInstance.objects.all().delete()
    assert json.loads(cli("stats", "--json"))["queue"]["backlog"] == "STALLED"
    assert "queue     1 queued, 1 due" in cli("stats")


def test_stats_says_stalled_when_slots_are_overdue_and_no_scheduler_is_up() -> None:
    """With every scheduler down nothing is queued, yet nothing runs: a fresh-user trial
    read HEALTHY with 10-second schedules 35 s overdue."""
    from datetime import timedelta

    from django.utils import timezone

    from schedules.models import SchedulerInstance

    schedule = make_schedule("a", "test.echo", every(10))

    def backlog(late: float) -> dict:
        at = timezone.now() - timedelta(seconds=late)
        Schedule.objects.filter(pk=schedule.pk).update(next_run_at=at)
        return json.loads(cli("stats", "--json"))["queue"]

    assert backlog(35)["backlog"] == "STALLED"
    assert backlog(35)["oldest_slot_late_seconds"] >= 35
    SchedulerInstance.objects.create(id="s", host="h", pid=1, heartbeat_at=timezone.now())
    assert backlog(-5) == {"queued": 0, "due": 0, "oldest_due_age_seconds": 0.0,
                           "oldest_slot_late_seconds": 0.0, "backlog": "HEALTHY"}  # fmt: skip
    assert backlog(35)["backlog"] == "HEALTHY"  # a scheduler is up, within the limits
    assert backlog(90)["backlog"] == "DEGRADED"
    assert backlog(400)["backlog"] == "STALLED"
    assert "a slot late 4" in cli("stats")


def test_run_inline_ends_at_the_timeout_though_the_tasks_thread_goes_on(manage) -> None:
    """A sync body cannot be stopped; the CLI records the timeout and leaves it."""
    assert manage("migrate", "--noinput").returncode == 0
    created = manage(
        "schedules", "create", "slow", "--task", "test.sleep_inline", "--every", "3600",
        "--kwargs", '{"seconds": 120}', "--timeout", "1",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    began = time.monotonic()

    result = manage("schedules", "run", "slow", "--inline")

    assert time.monotonic() - began < 30
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].endswith("ended timed_out")
    assert "Traceback" not in result.stderr
