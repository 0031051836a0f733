"""/runs: filters, cursor pagination, one run in full, and cancel."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from schedules import services
from schedules.models import Run, RunCounter, RunOutput, RunStatus
from schedules.scheduler import outcomes
from tests.factories import every, held_elsewhere, lock_run, make_schedule

from .conftest import errors_of


def _runs(schedule, count: int, **fields) -> list[Run]:
    made = []
    for _ in range(count):
        run = services.schedule_run_now(schedule=schedule)
        Run.objects.filter(pk=run.pk).update(**fields)
        made.append(Run.objects.get(pk=run.pk))
    return made


def test_cursor_pages_walk_every_run_once_newest_first(as_role, schedule) -> None:
    made = _runs(schedule, 7, status=RunStatus.SUCCEEDED)
    api = as_role("viewer", "token")
    seen, path, pages = [], "/runs?limit=3&schedule=nightly", 0
    while path:
        body = api.get(path).json()
        seen += [run["id"] for run in body["results"]]
        pages += 1
        path = body["next"] and body["next"].split("/api/v1", 1)[1]
        if body["next"]:
            assert "schedule=nightly" in body["next"] and body["next_cursor"] in body["next"]
    assert seen == sorted((run.pk for run in made), reverse=True)
    assert pages == 3


def test_a_new_run_does_not_shift_the_pages_already_handed_out(as_role, schedule) -> None:
    made = _runs(schedule, 4)
    api = as_role("viewer", "token")
    first = api.get("/runs?limit=2").json()
    _runs(schedule, 1)
    second = api.get(f"/runs?limit=2&cursor={first['next_cursor']}").json()
    assert [r["id"] for r in second["results"]] == [made[1].pk, made[0].pk]
    assert second["next"] is None


def test_runs_filter_by_status_task_schedule_reason_and_time(as_role, schedule) -> None:
    other = make_schedule("other", "test.fail", every(60))
    now = timezone.now()
    old = _runs(schedule, 1, status=RunStatus.FAILED, queued_at=now - timedelta(days=2))[0]
    mine = _runs(schedule, 1, status=RunStatus.SUCCEEDED)[0]
    theirs = _runs(other, 1, reason="retry")[0]
    api = as_role("viewer", "token")

    def ids(query: str) -> list[int]:
        response = api.get(f"/runs?{query}")
        assert response.status_code == 200, response.content
        return [run["id"] for run in response.json()["results"]]

    assert ids("status=failed&status=succeeded") == [mine.pk, old.pk]
    assert ids("task=test.fail") == [theirs.pk]
    assert ids("schedule=nightly") == [mine.pk, old.pk]
    assert ids("reason=retry") == [theirs.pk]
    since = (now - timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert ids(f"since={since}") == [theirs.pk, mine.pk]
    assert ids(f"until={since}") == [old.pk]


def test_show_has_kwargs_result_error_and_traceback(as_role, schedule) -> None:
    (run,) = _runs(schedule, 1, status=RunStatus.FAILED, error="RuntimeError: boom",
                   traceback="Traceback ...", result={"rows": 3})  # fmt: skip
    body = as_role("viewer", "token").get(f"/runs/{run.pk}").json()
    assert body["error"] == "RuntimeError: boom"
    assert body["traceback"] == "Traceback ..."
    assert body["result"] == {"rows": 3}
    assert body["kwargs"] == {}
    assert body["schedule_id"] == schedule.pk


def test_output_is_what_the_run_saved_and_says_whether_more_may_come(as_role, schedule) -> None:
    running, quiet = _runs(schedule, 2, status=RunStatus.RUNNING, started_at=timezone.now())
    cut = "head\n… [1,000 characters cut] …\ntail\n"
    RunOutput.objects.create(run=running, text=cut, total=1_010, cut=1_000)
    api = as_role("viewer", "token")
    body = api.get(f"/runs/{running.pk}/output").json()
    assert body["text"] == cut and (body["total"], body["cut"]) == (1_010, 1_000)
    assert body["run_id"] == running.pk and body["status"] == "running"
    assert body["finished"] is False and body["updated_at"] is not None
    Run.objects.filter(pk=quiet.pk).update(status=RunStatus.SUCCEEDED, finished_at=timezone.now())
    body = api.get(f"/runs/{quiet.pk}/output").json()
    assert (body["text"], body["total"], body["cut"], body["updated_at"]) == ("", 0, 0, None)
    assert body["finished"] is True


def test_the_output_of_a_run_cancelled_while_it_ran_settles_before_it_is_finished(
    as_role, schedule
) -> None:
    (run,) = _runs(schedule, 1, status=RunStatus.RUNNING, started_at=timezone.now())
    api = as_role("operator", "token")
    assert api.post(f"/runs/{run.pk}/cancel").status_code == 200
    # Its scheduler has yet to stop the body and save its last lines.
    body = api.get(f"/runs/{run.pk}/output").json()
    assert (body["status"], body["finished"]) == ("cancelled", False)
    settled = timezone.now() - timedelta(seconds=11)
    Run.objects.filter(pk=run.pk).update(finished_at=settled)
    assert api.get(f"/runs/{run.pk}/output").json()["finished"] is True
    (queued,) = _runs(schedule, 1)  # never began: nothing more can come
    assert api.post(f"/runs/{queued.pk}/cancel").status_code == 200
    assert api.get(f"/runs/{queued.pk}/output").json()["finished"] is True


def test_cancel_of_a_queued_run_records_who(as_role, schedule) -> None:
    (run,) = _runs(schedule, 1)
    response = as_role("operator", "token").post(f"/runs/{run.pk}/cancel")
    assert response.status_code == 200, response.content
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert run.error.startswith("cancelled by operator-token")
    assert run.finished_at is not None


def test_a_cancelled_running_run_keeps_its_ending_when_its_scheduler_reports(
    as_role, schedule
) -> None:
    (run,) = _runs(schedule, 1, status=RunStatus.RUNNING, started_at=timezone.now())
    assert as_role("operator", "token").post(f"/runs/{run.pk}/cancel").status_code == 200
    # The owning scheduler no longer finds it running (so it stops its task) ...
    assert outcomes.still_running([run.pk]) == set()
    # ... and the outcome it then records does not overwrite the cancel.
    ours = Run.objects.select_related("schedule").get(pk=run.pk)
    outcome = {"status": RunStatus.SUCCEEDED, "error": "", "traceback": "", "result": None,
               "retry_in": None}  # fmt: skip
    assert outcomes.finish_runs(items=[(ours, outcome)], now=timezone.now()) == [(None, None, [])]
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED


def test_a_cancelled_run_counts_on_its_schedule_once_if_its_body_ran(as_role, schedule) -> None:
    queued, running = _runs(schedule, 2)
    Run.objects.filter(pk=running.pk).update(status=RunStatus.RUNNING, started_at=timezone.now())
    operator = as_role("operator", "token")
    assert operator.post(f"/runs/{queued.pk}/cancel").status_code == 200
    schedule.refresh_from_db()
    assert (schedule.run_count, schedule.last_outcome) == (0, "")  # it never ran
    assert operator.post(f"/runs/{running.pk}/cancel").status_code == 200
    schedule.refresh_from_db()
    assert (schedule.run_count, schedule.last_outcome) == (1, RunStatus.CANCELLED)
    assert schedule.last_error.startswith("cancelled by operator-token")
    text = [c.name for c in RunCounter.objects.filter(schedule_code=schedule.code)]
    assert "runs:cancelled" in text
    # Its scheduler reports the body's end later: counted once, not again.
    ours = Run.objects.select_related("schedule").get(pk=running.pk)
    outcome = {"status": RunStatus.CANCELLED, "error": "", "traceback": "", "result": None,
               "retry_in": None}  # fmt: skip
    outcomes.finish_runs(items=[(ours, outcome)], now=timezone.now())
    schedule.refresh_from_db()
    assert schedule.run_count == 1


@pytest.mark.parametrize("status", [RunStatus.SUCCEEDED, RunStatus.CANCELLED, RunStatus.SKIPPED])
def test_a_finished_run_cannot_be_cancelled(as_role, schedule, status) -> None:
    (run,) = _runs(schedule, 1, status=status)
    response = as_role("operator", "token").post(f"/runs/{run.pk}/cancel")
    assert response.status_code == 409
    assert errors_of(response) == {None: f"run #{run.pk} already ended ({status})"}
    assert Run.objects.get(pk=run.pk).status == status


@pytest.mark.production
def test_a_cancel_meeting_the_runs_outcome_being_written_is_refused_not_deadlocked(
    transactional_db,
) -> None:
    """The outcome writer locks its runs, then their schedules; a cancel locks the
    schedule, then the run. Waiting for the run's lock, each would wait for the other."""
    schedule = make_schedule("ending", "test.echo", every(60))
    run = services.schedule_run_now(schedule=schedule)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, started_at=timezone.now())
    writing_its_outcome = held_elsewhere(lock_run(run.pk))
    with writing_its_outcome, pytest.raises(services.CancelRefused, match="is ending now"):
        services.run_cancel(run=run, by=None)
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
