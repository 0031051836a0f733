"""A scheduler back from a long downtime: every schedule is late at once.

Its first claim pass opens a late incident (with its timeline event and one
notification per channel) on every schedule, and the next on-time slots close
them all. Both cost the same few statements for 3 schedules or 60; and the
catch-up of a skipped or once-only schedule reads only its latest slot.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from schedules.models import Channel, Incident, IncidentEvent, Notification, Schedule
from schedules.registry import registry
from schedules.scheduler import claims
from schedules.timing import Interval
from tests.factories import T0, every, make_schedule

DAY = 86_400


def late_schedules(prefix: str, count: int, misfire: str = "skip") -> list[Schedule]:
    return [
        make_schedule(f"{prefix}{i}", "test.echo", every(60), misfire_grace=30, misfire=misfire)
        for i in range(count)
    ]


def claim_at(seconds: float, up_since: float | None = None, limit: int = 500) -> list:
    since = None if up_since is None else T0 + timedelta(seconds=up_since)
    runs, _ = claims.claim_due(
        now=T0 + timedelta(seconds=seconds), instance_id="back", tasks=registry, limit=limit,
        max_catch_up=100, local_in_flight={}, up_since=since,
    )  # fmt: skip
    return runs


def claimed_in(prefix: str, seconds: float) -> tuple[int, int]:
    """Claim the slots of one group of schedules (the others are paused meanwhile)."""
    Schedule.objects.exclude(code__startswith=prefix).update(status="paused")
    with CaptureQueriesContext(connection) as queries:
        runs = claim_at(seconds)
    Schedule.objects.exclude(code__startswith=prefix).update(status="active")
    return len(runs), len(queries)


@pytest.mark.django_db
def test_a_day_down_opens_and_closes_every_late_incident_in_the_same_statements_for_3_or_60():
    Channel.objects.create(name="ops", kind="webhook", url="http://127.0.0.1:9/hook")
    few, many = late_schedules("few", 3), late_schedules("many", 60)

    (opened_few, few_queries), (opened_many, many_queries) = (
        claimed_in("few", DAY),
        claimed_in("many", DAY),
    )
    assert (opened_few, opened_many) == (3, 60)
    assert few_queries == many_queries
    late = Incident.objects.open().filter(kind="late")
    assert late.count() == 63
    assert IncidentEvent.objects.filter(event="late").count() == 63
    # One notification per incident and channel, each naming its own incident.
    assert sorted(Notification.objects.values_list("payload__incident__id", flat=True)) == sorted(
        late.values_list("pk", flat=True)
    )

    # The next slots are on time: every incident closes, again at a constant cost.
    next_slot = (Schedule.objects.order_by("next_run_at").first().next_run_at - T0).total_seconds()
    (closed_few, few_queries), (closed_many, many_queries) = (
        claimed_in("few", next_slot + 1),
        claimed_in("many", next_slot + 1),
    )
    assert (closed_few, closed_many) == (3, 60)
    assert few_queries == many_queries
    assert not Incident.objects.open().exists()
    assert IncidentEvent.objects.filter(event="closed").count() == 63
    assert {s.pk for s in few + many} == set(Incident.objects.values_list("schedule_id", flat=True))


@pytest.mark.django_db
def test_a_restart_reads_each_late_schedules_alert_rules_once(monkeypatch) -> None:
    """The late check and the incident it opens share one reading of the rules: reading
    them twice (settings, task and schedule layers merged and checked each time) cost
    4% of a restart's claim pass, for nothing."""
    from schedules.alerts import checks, record

    late_schedules("back", 40)
    read: list[str] = []

    def counted(schedule, tasks=registry):
        read.append(schedule.code)
        return rules_for(schedule, tasks)

    rules_for = checks.rules_for
    monkeypatch.setattr(checks, "rules_for", counted)
    monkeypatch.setattr(record, "rules_for", counted)
    assert len(claim_at(DAY)) == 40
    assert Incident.objects.open().filter(kind="late").count() == 40
    assert sorted(read) == sorted(f"back{i}" for i in range(40))


@pytest.mark.django_db
@pytest.mark.parametrize("misfire", ["skip", "once"])
def test_catching_up_a_day_once_or_not_at_all_reads_only_the_latest_slot(
    misfire, monkeypatch
) -> None:
    late_schedules("back", 1, misfire)
    computed = []
    slot = Interval.slot
    monkeypatch.setattr(Interval, "slot", lambda self, n: computed.append(n) or slot(self, n))
    (run,) = claim_at(DAY)
    # The last slot before now, found without walking the day's 1,440 (or the 100 kept).
    assert run.slot == T0 + timedelta(seconds=DAY)
    assert len(computed) < 10  # it was 104: the 100 kept slots, computed and dropped


@pytest.mark.django_db
def test_a_restart_skips_the_downtimes_slots_and_runs_those_due_while_it_caught_up() -> None:
    """misfire="skip" after a day down, the scheduler up for 10 s when it reaches these:
    a slot due 5 s ago (after the start, within its 60 s grace) runs; one due 30 s ago
    (before the start) is skipped with the rest of the downtime."""
    for code, offset in (("during", 0), ("before", 30)):
        anchor = (T0 + timedelta(seconds=offset)).isoformat()
        make_schedule(code, "test.echo", {"kind": "interval", "every": 60, "anchor": anchor})
    runs = claim_at(DAY + 5, up_since=DAY - 10)
    ran = {(r.schedule_code, r.status, (r.slot - T0).total_seconds()) for r in runs}
    assert ran == {
        ("during", "running", DAY),
        ("during", "skipped", DAY - 60),
        ("before", "skipped", DAY - 30),
    }
    (during,) = [r for r in runs if r.schedule_code == "during" and r.status == "skipped"]
    assert during.error.startswith("1439 slot(s) missed")  # the day's 1,440 less the one run


def due_after_the_restart(code: str, seconds: float) -> None:
    """A one-minute schedule made at the restart, its first slot `seconds` after it."""
    anchor = (T0 + timedelta(seconds=DAY + seconds)).isoformat()
    spec = {"kind": "interval", "every": 60, "anchor": anchor}
    make_schedule(code, "test.echo", spec, now=T0 + timedelta(seconds=DAY))


@pytest.mark.django_db
def test_a_slot_due_while_the_scheduler_catches_up_is_claimed_before_the_backlog() -> None:
    """Three schedules a day behind and one whose slot fell due after the restart, two
    claims a pass: the current slot goes in the first pass, not behind the backlog."""
    late_schedules("back", 3, misfire="once")
    due_after_the_restart("current", 2)

    first = claim_at(DAY + 5, up_since=DAY, limit=2)
    second = claim_at(DAY + 5, up_since=DAY, limit=2)

    assert [(r.schedule_code, r.reason) for r in first] == [
        ("current", "scheduled"),
        ("back0", "catch-up"),
    ]
    assert sorted(r.schedule_code for r in second) == ["back1", "back2"]


@pytest.mark.django_db
def test_with_room_in_the_batch_one_read_claims_the_current_slot_first_then_the_backlog() -> None:
    late_schedules("back", 3, misfire="once")
    due_after_the_restart("current", 2)

    claimed = [r.schedule_code for r in claim_at(DAY + 5, up_since=DAY, limit=5)]

    assert claimed == ["current", "back0", "back1", "back2"]


@pytest.mark.django_db
def test_a_backlog_within_half_the_batch_is_claimed_from_one_read_with_the_current_slots() -> None:
    """More due than a batch, the backlog within half of it: the current slots fill the
    rest from the same read (a restart's passes read no row they do not claim)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    late_schedules("back", 1, misfire="once")
    for i in range(5):
        due_after_the_restart(f"now{i}", 1 + i)

    with CaptureQueriesContext(connection) as queries:
        claimed = [r.schedule_code for r in claim_at(DAY + 10, up_since=DAY, limit=4)]

    assert claimed == ["now0", "now1", "now2", "back0"]
    reads = [q for q in queries.captured_queries if '"schedules_schedule"."kwargs"' in q["sql"]]
    assert len(reads) == 1


@pytest.mark.django_db
def test_when_current_slots_fill_every_batch_the_backlog_still_gets_half() -> None:
    """More slots fall due than a pass claims (a load beyond the machine): the
    backlog's schedules still run, or they would never run again."""
    late_schedules("back", 3, misfire="once")
    for i in range(4):
        due_after_the_restart(f"now{i}", 1 + i)

    claimed = [r.schedule_code for r in claim_at(DAY + 10, up_since=DAY, limit=4)]

    assert claimed == ["now0", "now1", "back0", "back1"]


@pytest.mark.django_db
def test_under_once_a_queued_catch_up_gives_way_to_a_later_catch_up_of_its_schedule() -> None:
    """No worker free and the next slot claimed past its grace too (a load beyond the
    machine): the newer catch-up does the work, the older one is superseded."""
    from schedules.models import Run

    late_schedules("back", 1, misfire="once")
    no_worker = claims.WorkerSlots(0, lambda name: True)
    for seconds in (DAY + 5, DAY + 200):
        claims.claim_due(
            now=T0 + timedelta(seconds=seconds), instance_id="back", tasks=registry, limit=500,
            max_catch_up=100, local_in_flight={}, slots=no_worker,
        )  # fmt: skip

    runs = list(Run.objects.order_by("pk"))
    assert [(r.reason, r.status) for r in runs] == [("catch-up", "skipped"), ("catch-up", "queued")]
    assert runs[0].error.startswith("superseded: the slot of ")
