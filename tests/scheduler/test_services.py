"""Status transitions, code defaults and the operations shared by every caller."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from django.utils import timezone

from schedules import services
from schedules.models import Schedule, ScheduleSource, ScheduleStatus
from schedules.registry import registry
from schedules.timing import InvalidTrigger
from tests.factories import T0, every, make_schedule

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("start", "operation", "end"),
    [
        ("active", services.schedule_pause, "paused"),
        ("paused", services.schedule_resume, "active"),
        ("active", services.schedule_cancel, "cancelled"),
        ("paused", services.schedule_cancel, "cancelled"),
        ("active", services.schedule_complete, "completed"),
    ],
)
def test_allowed_transitions(start, operation, end) -> None:
    schedule = make_schedule("s", "test.echo", every(60))
    Schedule.objects.filter(pk=schedule.pk).update(status=start)
    changed = operation(schedule=schedule)
    assert changed.status == end
    schedule.refresh_from_db()
    assert schedule.status == end


@pytest.mark.parametrize(
    ("start", "operation", "message"),
    [
        ("active", services.schedule_resume, "cannot resume schedule 's': it is active"),
        ("paused", services.schedule_pause, "cannot pause schedule 's': it is paused"),
        ("paused", services.schedule_complete, "cannot complete schedule 's': it is paused"),
        ("cancelled", services.schedule_resume, "cannot resume schedule 's': it is cancelled"),
        ("cancelled", services.schedule_pause, "cannot pause schedule 's': it is cancelled"),
        ("cancelled", services.schedule_cancel, "cannot cancel schedule 's': it is cancelled"),
        ("completed", services.schedule_resume, "cannot resume schedule 's': it is completed"),
        ("completed", services.schedule_cancel, "cannot cancel schedule 's': it is completed"),
    ],
)
def test_refused_transitions_say_why_and_change_nothing(start, operation, message) -> None:
    schedule = make_schedule("s", "test.echo", every(60))
    Schedule.objects.filter(pk=schedule.pk).update(status=start)
    with pytest.raises(services.InvalidTransition, match=message):
        operation(schedule=schedule)
    schedule.refresh_from_db()
    assert schedule.status == start


def test_resume_computes_the_next_slot_from_now() -> None:
    schedule = make_schedule("s", "test.echo", every(60))
    services.schedule_pause(schedule=schedule)
    later = T0 + timedelta(hours=5, seconds=30)
    resumed = services.schedule_resume(schedule=schedule, now=later)
    assert resumed.next_run_at == T0 + timedelta(hours=5, seconds=60)


def test_cancel_clears_the_next_slot() -> None:
    schedule = services.schedule_cancel(schedule=make_schedule("s", "test.echo", every(60)))
    assert schedule.next_run_at is None


def test_create_refuses_a_bad_trigger() -> None:
    with pytest.raises(InvalidTrigger, match="never fires"):
        make_schedule("bad", "test.echo", {"kind": "cron", "expression": "0 0 30 2 *"})
    assert not Schedule.objects.exists()


def test_interval_jitter_is_seeded_with_the_code() -> None:
    schedule = make_schedule("seeded", "test.echo", {"kind": "interval", "every": 60, "jitter": 5})
    assert schedule.trigger["seed"] == "seeded"


def test_code_defaults_are_created_when_missing() -> None:
    created = services.sync_code_defaults(now=T0)
    assert "test.every_hour" in created
    schedule = Schedule.objects.get(code="test.every_hour")
    assert schedule.source == ScheduleSource.CODE
    assert schedule.next_run_at == T0 + timedelta(hours=1)
    assert services.sync_code_defaults(now=T0) == []


def test_an_operator_record_always_wins() -> None:
    services.sync_code_defaults(now=T0)
    Schedule.objects.filter(code="test.every_hour").update(
        trigger={"kind": "interval", "every": 60}, source=ScheduleSource.OPERATOR
    )
    services.sync_code_defaults(now=T0)
    assert Schedule.objects.get(code="test.every_hour").trigger["every"] == 60


def test_deleting_a_code_default_resets_it_at_the_next_sync() -> None:
    services.sync_code_defaults(now=T0)
    Schedule.objects.filter(code="test.every_hour").update(status=ScheduleStatus.PAUSED)
    Schedule.objects.filter(code="test.every_hour").delete()
    services.sync_code_defaults(now=T0)
    schedule = Schedule.objects.get(code="test.every_hour")
    assert (schedule.status, schedule.trigger["every"]) == ("active", 3600)


def test_reset_restores_the_code_default_in_place_and_keeps_it_paused() -> None:
    services.sync_code_defaults(now=timezone.now())
    schedule = Schedule.objects.get(code="test.every_hour")
    Schedule.objects.filter(pk=schedule.pk).update(
        trigger={"kind": "interval", "every": 5}, max_attempts=4,
        source=ScheduleSource.OPERATOR, status=ScheduleStatus.PAUSED,
    )  # fmt: skip
    other = make_schedule("other-hourly", "test.every_hour", every(60))
    fresh = services.schedule_reset_to_default(schedule=schedule)
    assert fresh.pk == schedule.pk
    assert (fresh.trigger["every"], fresh.max_attempts) == (3600, 1)
    assert (fresh.status, fresh.source) == (ScheduleStatus.PAUSED, ScheduleSource.CODE)
    other.refresh_from_db()
    assert other.trigger["every"] == 60  # no other record is touched


def test_reset_is_refused_for_a_schedule_that_is_not_the_code_default_record() -> None:
    services.sync_code_defaults(now=timezone.now())
    plain = make_schedule("plain", "test.echo", every(60))
    sibling = make_schedule("sibling", "test.every_hour", every(60))
    for schedule in (plain, sibling):
        with pytest.raises(services.RunRefused, match="is not a code-default record"):
            services.schedule_reset_to_default(schedule=schedule, tasks=registry)


def test_an_untouched_code_default_follows_the_code_and_an_edited_one_wins() -> None:
    from dataclasses import replace

    from schedules import defaults
    from schedules.registry import Registry
    from schedules.timing import Interval

    services.sync_code_defaults(now=T0)
    before = Schedule.objects.get(code="test.every_hour").updated_at
    changed = Registry()
    changed.declarations = dict(registry.declarations)
    declaration = registry.get("test.every_hour")
    changed.declarations["test.every_hour"] = [
        replace(declaration, default_trigger=Interval(600, seed="test.every_hour"))
    ]
    assert services.sync_code_defaults(tasks=changed, now=T0) == ["test.every_hour"]
    record = Schedule.objects.get(code="test.every_hour")
    assert record.trigger["every"] == 600
    assert record.next_run_at == T0 + timedelta(minutes=10)
    # Moved, as by any edit: a run held for a worker reads its schedule again (queued.py).
    assert record.updated_at != before
    services.schedule_update(schedule=record, trigger=every(120), now=T0)
    assert services.sync_code_defaults(tasks=changed, now=T0) == []
    record.refresh_from_db()
    assert record.trigger["every"] == 120
    assert set(defaults.differences(record, changed)) == {"trigger"}


def test_a_dotted_task_name_is_a_valid_code() -> None:
    schedule = make_schedule("reports.daily", "test.echo", every(60))
    schedule.full_clean()
    with pytest.raises(Exception, match="letters, digits"):
        make_schedule("has space", "test.echo", every(60))


def test_a_schedule_shows_its_crons_zone_unless_told_otherwise() -> None:
    berlin = {"kind": "cron", "expression": "0 9 * * *", "tz": "Europe/Berlin"}
    assert make_schedule("a", "test.echo", berlin).tz == "Europe/Berlin"
    assert make_schedule("b", "test.echo", berlin, tz="Asia/Tokyo").tz == "Asia/Tokyo"
    assert make_schedule("c", "test.echo", every(60)).tz == "UTC"


def test_a_new_schedule_takes_its_tasks_declared_options_unless_given() -> None:
    from dataclasses import replace

    from schedules.registry import Registry

    tasks = Registry()
    tasks.declarations = dict(registry.declarations)
    declaration = registry.get("test.echo")
    tasks.declarations["test.echo"] = [
        replace(declaration, options=replace(declaration.options, timeout=30, max_attempts=3))
    ]
    made = services.schedule_create(
        code="defaults", task_name="test.echo", trigger=every(60), tasks=tasks, now=T0
    )
    assert (made.timeout, made.max_attempts) == (30, 3)
    given = services.schedule_create(
        code="given", task_name="test.echo", trigger=every(60), tasks=tasks, now=T0,
        max_attempts=1,
    )  # fmt: skip
    assert (given.timeout, given.max_attempts) == (30, 1)


def test_named_priorities_are_accepted_beside_integers() -> None:
    from schedules.choices import priority_value

    assert [priority_value(v) for v in ("low", "normal", "HIGH", "critical", 5, "7")] == [
        -10, 0, 10, 20, 5, 7,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="low, normal, high, critical"):
        priority_value("urgent")


def test_a_past_date_is_refused_at_create_with_the_reason() -> None:
    with pytest.raises(InvalidTrigger, match="no fire time after now"):
        make_schedule("past", "test.echo", {"kind": "date", "at": "2020-01-01T00:00:00+00:00"})


def test_reactivate_brings_back_a_completed_schedule_only_with_a_future_fire() -> None:
    later = (T0 + timedelta(days=1)).isoformat()
    schedule = make_schedule("once", "test.echo", {"kind": "date", "at": later})
    Schedule.objects.filter(pk=schedule.pk).update(
        status=ScheduleStatus.COMPLETED, next_run_at=None
    )
    revived = services.schedule_reactivate(schedule=schedule, now=T0)
    assert (revived.status, revived.next_run_at) == (ScheduleStatus.ACTIVE, T0 + timedelta(days=1))
    Schedule.objects.filter(pk=schedule.pk).update(status=ScheduleStatus.CANCELLED)
    with pytest.raises(services.InvalidTransition, match="no fire time after now"):
        services.schedule_reactivate(schedule=schedule, now=T0 + timedelta(days=2))
    with pytest.raises(services.InvalidTransition, match="cannot resume"):
        services.schedule_resume(schedule=schedule)


def test_cancel_drops_the_queued_runs() -> None:
    from schedules.models import Run, RunStatus

    schedule = make_schedule("doomed", "test.echo", every(60))
    Run.objects.create(
        schedule=schedule, schedule_code="doomed", task_name="test.echo", reason="retry"
    )
    services.schedule_cancel(schedule=schedule)
    (run,) = Run.objects.filter(schedule=schedule)
    assert run.status == RunStatus.CANCELLED
    assert "the schedule was cancelled" in run.error


def test_an_edit_that_leaves_the_zone_empty_shows_the_triggers_zone() -> None:
    berlin = {"kind": "cron", "expression": "0 9 * * *", "tz": "Europe/Berlin"}
    schedule = make_schedule("zoned", "test.echo", every(60), tz="Asia/Tokyo")
    edited = services.schedule_update(schedule=schedule, trigger=berlin, tz="", now=T0)
    assert edited.tz == "Europe/Berlin"


def test_resuming_a_schedule_whose_trigger_no_longer_parses_keeps_it_active_not_done() -> None:
    schedule = make_schedule("broken", "test.echo", every(60))
    Schedule.objects.filter(pk=schedule.pk).update(
        status=ScheduleStatus.PAUSED, trigger={"kind": "cron", "expression": "not cron"}
    )
    resumed = services.schedule_resume(schedule=schedule, now=T0)
    assert (resumed.status, resumed.next_run_at) == (ScheduleStatus.ACTIVE, None)


# A value that breaks each of the schedule table's check constraints. The services
# validate a schedule in Python (no query per constraint: 90% of a create's time was
# Django's constraint queries), so each constraint needs a field rule that says the same.
BREAKS_CONSTRAINT = {
    "schedule_status_valid": {"status": "sleeping"},
    "schedule_source_valid": {"source": "elsewhere"},
    "schedule_overlap_valid": {"overlap": "queue"},
    "schedule_misfire_valid": {"misfire": "never"},
    "schedule_max_attempts_positive": {"max_attempts": 0},
    "schedule_max_instances_positive": {"max_instances": 0},
    "schedule_timeout_not_negative": {"timeout": -1.0},
    "schedule_dispatch_valid": {"dispatch": "carrier-pigeon"},
}


def test_every_check_constraint_is_a_field_error_before_any_save() -> None:
    from django.core.exceptions import ValidationError
    from django.db.models import CheckConstraint

    checks = {c.name for c in Schedule._meta.constraints if isinstance(c, CheckConstraint)}
    assert checks == set(BREAKS_CONSTRAINT), "name a breaking value for each constraint"
    schedule = make_schedule("s", "test.echo", every(60))
    for name, values in BREAKS_CONSTRAINT.items():
        ((field, value),) = values.items()
        saves = [partial(services.schedule_create, code=f"new-{field}", task_name="test.echo")]
        if field != "source":  # an edit always stamps source=operator
            saves.append(partial(services.schedule_update, schedule=schedule))
        for save in saves:
            with pytest.raises(ValidationError) as refused:
                save(trigger=every(60), **values)
            assert field in refused.value.message_dict, (name, save.func.__name__)
    assert Schedule.objects.count() == 1
