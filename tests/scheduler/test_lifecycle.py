"""Middleware, hooks, one-shots, run-now, orphans, duplicates, crashes, shutdown, faults."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError
from django.db.models import Sum
from django.utils import timezone

from schedules import counter_totals, services
from schedules.models import (
    CounterTotal,
    Run,
    RunCounter,
    RunOutput,
    RunReason,
    RunStatus,
    RunTally,
    Schedule,
    SchedulerInstance,
    ScheduleStatus,
)
from schedules.registry import Registry, TaskOptions, registry
from schedules.scheduler import claims, instances, outcomes, pipeline
from schedules.scheduler.engine import Scheduler
from schedules.signals import run_finished, run_started
from tests.factories import (
    T0,
    FakeClock,
    create,
    every,
    inline_executor,
    make_schedule,
    runs_of,
    schedule_of,
)
from tests.taskapp import tasks as test_tasks


async def test_global_middleware_wraps_every_run_outermost_first(clock, transactional_db) -> None:
    seen: list[str] = []

    def tag(name):
        def factory(handler, run):
            async def wrapped(run):
                seen.append(f"{name}>{run.schedule_code}")
                result = await handler(run)
                seen.append(f"<{name}")
                return result

            return wrapped

        return factory

    executor = inline_executor(middleware=[tag("outer"), tag("inner")])
    scheduler = Scheduler(clock=clock, executor=executor)
    await scheduler.start()
    try:
        await create("mw", "test.echo", every(60))
        clock.advance(60)
        await scheduler.run_pass()
        await scheduler.wait_idle()
    finally:
        await scheduler.shutdown()
    assert seen == ["outer>mw", "inner>mw", "<inner", "<outer"]


async def test_rate_limit_skips_runs_over_the_limit(clock, transactional_db) -> None:
    ticks = {"now": 0.0}
    limited = Registry()
    limited.declarations = dict(registry.declarations)
    decl = registry.get("test.echo")
    from dataclasses import replace

    limited.declarations["test.echo"] = [
        replace(decl, middleware=(pipeline.rate_limit(2, per=60, clock=lambda: ticks["now"]),))
    ]
    scheduler = Scheduler(clock=clock, tasks=limited, executor=inline_executor())
    await scheduler.start()
    try:
        await create("limited", "test.echo", every(10))
        for _ in range(4):
            clock.advance(10)
            await scheduler.run_pass()
            await scheduler.wait_idle()
        ticks["now"] = 60.0  # the bucket refills
        clock.advance(10)
        await scheduler.run_pass()
        await scheduler.wait_idle()
    finally:
        await scheduler.shutdown()
    statuses = [r.status for r in await runs_of("limited")]
    assert statuses == ["succeeded", "succeeded", "skipped", "skipped", "succeeded"]
    skipped = (await runs_of("limited"))[2]
    assert skipped.error == "rate limit: at most 2 runs per 60s"


async def test_signals_fire_and_a_failing_receiver_breaks_nothing(scheduler, clock) -> None:
    calls = []

    def good(sender, run, **kwargs):
        calls.append((run.status, run.schedule_code))

    def bad(sender, run, **kwargs):
        raise ValueError("receiver bug")

    run_started.connect(good)
    run_started.connect(bad)
    run_finished.connect(good)
    run_finished.connect(bad)
    try:
        await create("hooked", "test.echo", every(60))
        clock.advance(60)
        await scheduler.run_pass()
        await scheduler.wait_idle()
    finally:
        for receiver in (good, bad):
            run_started.disconnect(receiver)
            run_finished.disconnect(receiver)
    assert calls == [("running", "hooked"), ("succeeded", "hooked")]
    (run,) = await runs_of("hooked")
    assert run.status == RunStatus.SUCCEEDED


async def test_a_one_shot_completes_after_its_run(scheduler, clock) -> None:
    at = (T0 + timedelta(minutes=5)).isoformat()
    await create("once", "test.echo", {"kind": "date", "at": at})
    clock.advance(300)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    schedule = await schedule_of("once")
    assert schedule.status == ScheduleStatus.COMPLETED
    assert schedule.next_run_at is None
    assert [r.status for r in await runs_of("once")] == [RunStatus.SUCCEEDED]


async def test_a_failing_one_shot_completes_after_its_last_attempt(scheduler, clock) -> None:
    at = (T0 + timedelta(minutes=5)).isoformat()
    await create(
        "once-fails", "test.fail", {"kind": "date", "at": at}, max_attempts=2, retry_delay=1
    )
    clock.advance(300)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert (await schedule_of("once-fails")).status == ScheduleStatus.ACTIVE  # a retry is queued
    clock.advance(1)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert (await schedule_of("once-fails")).status == ScheduleStatus.COMPLETED


async def test_run_now_is_queued_then_picked_up_on_the_next_pass(scheduler, clock) -> None:
    schedule = await create("manual", "test.echo", {"kind": "cron", "expression": "0 0 1 1 *"})
    run = await sync_to_async(services.schedule_run_now)(schedule=schedule)
    assert (run.status, run.reason) == (RunStatus.QUEUED, RunReason.MANUAL)
    clock.current = run.queued_at  # run-now is stamped with the wall clock
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("manual")
    assert run.status == RunStatus.SUCCEEDED
    assert run.slot is None


async def test_a_wake_hint_cuts_the_sleep_short(scheduler, clock) -> None:
    from schedules.scheduler.hints import wake_local

    stop = asyncio.Event()
    loop_task = asyncio.create_task(scheduler.run_forever(stop))
    await asyncio.sleep(0.05)
    wake_local()
    await asyncio.sleep(0.05)
    stop.set()
    await loop_task
    assert scheduler.passes >= 2


async def test_orphans_and_duplicates_are_flagged_and_never_run(clock, transactional_db) -> None:
    tasks = Registry()
    tasks.declarations = {
        name: list(found)
        for name, found in registry.declarations.items()
        if name != "test.fail"  # test.fail's schedules become orphans
    }
    twin = registry.get("test.echo_async")
    tasks.declarations["test.echo"] = [registry.get("test.echo"), twin]  # a duplicate

    await create("orphan", "test.fail", every(60))
    await create("dup", "test.echo", every(60))
    await create("fine", "test.echo_async", every(60))
    scheduler = Scheduler(clock=clock, tasks=tasks, executor=inline_executor())
    await scheduler.start()
    try:
        clock.advance(60)
        await scheduler.run_pass()
        await scheduler.wait_idle()
        for code, flag in (("orphan", "orphan"), ("dup", "duplicate")):
            schedule = await schedule_of(code)
            with pytest.raises(services.RunRefused, match=f"\\({flag}\\)"):
                await sync_to_async(services.schedule_run_now)(schedule=schedule, tasks=tasks)
    finally:
        await scheduler.shutdown()
    assert await runs_of("orphan") == []
    assert await runs_of("dup") == []
    assert len(await runs_of("fine")) == 1
    # Orphans are never deleted automatically.
    assert await sync_to_async(Schedule.objects.filter(code="orphan").exists)()


async def test_runs_of_a_dead_scheduler_become_interrupted(scheduler, clock, settings) -> None:
    """Staleness is read on the database's clock: this scheduler's own clock (the fake
    one, months away from the database's) neither hides nor fakes a dead peer."""
    settings.SILLO_STALE_AFTER = 30
    schedule = await create("victim", "test.echo", every(3600))
    beat = timezone.now() - timedelta(seconds=10)

    def leave_a_running_run():
        SchedulerInstance.objects.create(
            id="dead", host="elsewhere", pid=1, started_at=beat, heartbeat_at=beat
        )
        return Run.objects.create(
            schedule=schedule, schedule_code="victim", task_name="test.echo",
            reason=RunReason.SCHEDULED, slot=T0, status=RunStatus.RUNNING,
            started_at=T0, scheduler="dead",
        )  # fmt: skip

    run = await sync_to_async(leave_a_running_run)()
    clock.advance(600)  # this host's clock jumps ten minutes: nothing changes
    scheduler._last.pop("recover", None)
    await scheduler.run_pass()
    assert (await runs_of("victim"))[0].status == RunStatus.RUNNING  # heartbeat still fresh

    await sync_to_async(SchedulerInstance.objects.filter(id="dead").update)(
        heartbeat_at=timezone.now() - timedelta(seconds=31)
    )
    scheduler._last.pop("recover", None)
    await scheduler.run_pass()
    (run,) = await runs_of("victim")
    assert run.status == RunStatus.INTERRUPTED
    assert run.error == "scheduler dead stopped before the run finished"
    dead = await sync_to_async(SchedulerInstance.objects.get)(id="dead")
    assert dead.stopped_at is not None


async def test_shutdown_gives_grace_then_cancels_and_records(clock, transactional_db, settings):
    settings.SILLO_SHUTDOWN_GRACE = 0.2
    scheduler = Scheduler(clock=clock, executor=inline_executor())
    await scheduler.start()
    await create("long", "test.block_async", every(60), kwargs={"gate": "long"})
    await create("short", "test.echo", every(60))
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.shutdown()
    (long_run,) = await runs_of("long")
    (short_run,) = await runs_of("short")
    assert short_run.status == RunStatus.SUCCEEDED
    assert long_run.status == RunStatus.CANCELLED
    assert long_run.error == "scheduler shut down"
    instance = await sync_to_async(SchedulerInstance.objects.get)(id=scheduler.instance_id)
    assert instance.stopped_at is not None


async def test_a_failing_pass_is_logged_and_retried_with_backoff(
    scheduler, clock, monkeypatch, caplog
) -> None:
    real = claims.claim_due
    failures = {"left": 3}

    def flaky_claim(**kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise OperationalError("database is locked")
        return real(**kwargs)

    monkeypatch.setattr(claims, "claim_due", flaky_claim)
    await create("survivor", "test.echo", every(60))
    clock.advance(60)
    stop = asyncio.Event()
    task = asyncio.create_task(scheduler.run_forever(stop))
    for _ in range(200):
        if await runs_of("survivor"):
            break
        await asyncio.sleep(0.01)
    stop.set()
    await task
    assert clock.waits[:3] == [1.0, 2.0, 4.0]
    assert "scheduler pass failed" in caplog.text
    # The fake clock jumps through every wait, so the loop may reach later slots
    # before it stops; what matters is that the slot the failures delayed ran, once.
    runs = await runs_of("survivor")
    assert runs[0].slot == T0 + timedelta(seconds=60)
    assert len({r.slot for r in runs}) == len(runs)
    assert {r.status for r in runs} == {RunStatus.SUCCEEDED}


async def test_an_outcome_the_database_refuses_is_written_again_after_a_pause(
    scheduler, clock, monkeypatch, caplog
) -> None:
    real = outcomes.finish_runs
    failures = {"left": 2}

    def flaky_finish(**kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise OperationalError("database is locked")
        return real(**kwargs)

    monkeypatch.setattr(outcomes, "finish_runs", flaky_finish)
    await create("recorded", "test.echo", every(60))
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert clock.waits == [1, 2]
    assert "could not record 1 run(s) (try 2)" in caplog.text
    (run,) = await runs_of("recorded")
    assert run.status == RunStatus.SUCCEEDED
    # When its body ended, not when the database finally took the outcome (T0 + 63 s).
    assert run.finished_at == T0 + timedelta(seconds=60)


async def test_a_broken_channel_layer_never_stops_scheduling(
    scheduler, clock, monkeypatch, every_group_listened
) -> None:
    layer = every_group_listened

    async def broken(*args, **kwargs):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(layer, "group_send", broken)
    await create("unheard", "test.echo", every(60))
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert [r.status for r in await runs_of("unheard")] == [RunStatus.SUCCEEDED]


async def test_a_stalled_channel_layer_delays_no_run(
    scheduler, clock, monkeypatch, every_group_listened
) -> None:
    """The live log's layer hangs (Redis stopped, not refusing): the run's body starts
    and its outcome is recorded at once, and the pages still hear "running", then the
    last of its output, then its end."""
    layer = every_group_listened
    stalled, heard = asyncio.Event(), []

    async def hanging(group, message):
        await stalled.wait()
        if "runs" in message:
            heard.extend(run["status"] for run in message["runs"])
        else:
            heard.append(message["type"])

    await create("unstalled", "test.chatty_inline", every(60))
    monkeypatch.setattr(layer, "group_send", hanging)
    monkeypatch.setattr("schedules.layer.SEND_TIMEOUT", 60.0)  # stalled for the whole test
    # Its output goes out with its end, not streamed meanwhile (a slow machine's timing).
    monkeypatch.setattr("schedules.scheduler.streaming.LIVE_INTERVAL", 60.0)
    clock.advance(60)
    await scheduler.run_pass()
    for _ in range(500):
        if [r.status for r in await runs_of("unstalled")] == [RunStatus.SUCCEEDED]:
            break
        await asyncio.sleep(0.01)
    assert [r.status for r in await runs_of("unstalled")] == [RunStatus.SUCCEEDED]
    assert heard == []  # nothing has got through the layer yet
    stalled.set()
    await scheduler.wait_idle()
    await scheduler.announcer.drain()
    run_events = [word for word in heard if word != "run.output"]
    assert run_events == ["running", "running", "succeeded", "succeeded"]  # two groups each
    assert heard.index("running") < heard.index("run.output") < heard.index("succeeded")


async def test_run_events_reach_the_all_runs_and_schedule_groups(scheduler, clock) -> None:
    from channels.layers import get_channel_layer

    from schedules.events import ALL_RUNS_GROUP, schedule_group

    layer = get_channel_layer()
    schedule = await create("watched", "test.echo", every(60))
    other = await create("unwatched", "test.echo", every(3600))
    everything = await layer.new_channel()
    just_one = await layer.new_channel()
    await layer.group_add(ALL_RUNS_GROUP, everything)
    await layer.group_add(schedule_group(schedule.pk), just_one)
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    await scheduler.announcer.drain()
    statuses = [run["status"] for run in await received_runs(layer, just_one)]
    assert statuses == ["running", "succeeded"]
    everything_heard = await received_runs(layer, everything)
    assert [run["schedule_code"] for run in everything_heard] == ["watched", "watched"]
    assert other.pk != schedule.pk


@pytest.mark.sqlite  # the in-process layer (Redis cannot say who listens: it sends to all)
async def test_run_events_go_only_to_the_groups_a_page_listens_on(
    scheduler, clock, monkeypatch
) -> None:
    """On the in-process layer a send to a group nobody listens to is work for nobody:
    a burst's thousand runs with no page open cost the loop a fifth of its time."""
    from channels.layers import get_channel_layer

    from schedules.events import schedule_group

    layer = get_channel_layer()
    sent, send = [], layer.group_send

    async def spy(group, message):
        sent.extend((group, run["status"]) for run in message["runs"])
        await send(group, message)

    monkeypatch.setattr(layer, "group_send", spy)
    watched = await create("watched", "test.echo", every(60))
    await create("unwatched", "test.echo", every(60))
    page = await layer.new_channel()
    await layer.group_add(schedule_group(watched.pk), page)
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    await scheduler.announcer.drain()
    group = schedule_group(watched.pk)
    assert sent == [(group, "running"), (group, "succeeded")]
    received = [run["status"] for run in await received_runs(layer, page)]
    assert received == ["running", "succeeded"]


async def received_runs(layer, channel: str) -> list[dict]:
    """The run events waiting on a channel, in order, whatever batches carried them."""
    runs = []
    while True:
        try:
            message = await asyncio.wait_for(layer.receive(channel), 0.2)
        except TimeoutError:
            return runs
        assert message["type"] == "run.event"
        runs.extend(message["runs"])


async def test_finished_runs_are_pruned_as_part_of_normal_work(scheduler, clock, settings) -> None:
    settings.SILLO_RUNS_PER_SCHEDULE = 3
    settings.SILLO_PRUNE_INTERVAL = 10
    await create("pruned", "test.echo", every(1))
    # Counted without the metrics' totals, as a process on older code does: the first
    # round recounts them.
    drift = {("gone", "runs:succeeded"): 4.0}
    await sync_to_async(counter_totals.upsert)(RunCounter, "schedule_code", drift)
    # A tally from long before the schedule page's days (run_tallies.KEPT_DAYS).
    await sync_to_async(RunTally.objects.create)(schedule_id=0, quarter=0, runs=1)
    for _ in range(12):
        clock.advance(1)
        await scheduler.run_pass()
        await scheduler.wait_idle()
    # Paused, so the pass that starts the round claims nothing: the round has its own
    # thread, and a run this pass made could finish before or after the round read.
    paused = Schedule.objects.filter(code="pruned")
    await sync_to_async(paused.update)(status=ScheduleStatus.PAUSED)
    shards = sync_to_async(lambda: set(CounterTotal.objects.values_list("shard", flat=True)))
    assert await shards() - {counter_totals.BASE}  # the scheduler counted in a shard
    clock.advance(10)
    await scheduler.run_pass()  # the prune timer came round
    await scheduler.wait_idle()
    assert len(await runs_of("pruned")) == 3
    assert await shards() == {counter_totals.BASE}  # folded
    counted, totals = await sync_to_async(lambda: (sums(RunCounter), sums(CounterTotal)))()
    assert counted == totals  # the drift recounted by the first round
    assert not await sync_to_async(RunTally.objects.filter(quarter=0).exists)()
    # This schedule's tallies: an earlier test's flush may leave other ids' rows behind.
    pruned = await schedule_of("pruned")
    tallies = RunTally.objects.filter(schedule_id=pruned.pk).values_list("runs", flat=True)
    tallied = await sync_to_async(lambda: sum(tallies))()
    finished = [run for run in await runs_of("pruned") if run.is_finished]
    assert tallied == len(finished)  # the pruned runs taken away from their tallies


def sums(model) -> list[tuple[str, float]]:
    return sorted(model.objects.values_list("name").annotate(total=Sum("value")).order_by())


def test_the_fake_clock_only_moves_when_told() -> None:
    clock = FakeClock()
    assert clock.now() == T0
    clock.advance(5)
    assert clock.now() == T0 + timedelta(seconds=5)


def test_task_options_defaults_match_the_design() -> None:
    options = TaskOptions()
    assert (options.max_attempts, options.max_instances, options.overlap, options.misfire) == (
        1,
        1,
        "skip",
        "skip",
    )


async def test_a_peer_on_another_node_with_the_same_host_and_pid_is_not_declared_dead(
    scheduler, clock
) -> None:
    """Containers may share a host name while their pids live in other namespaces."""
    await sync_to_async(SchedulerInstance.objects.create)(
        id="container", host=scheduler.host, pid=2**22 - 1, node="another-boot:pid:[1]",
        heartbeat_at=timezone.now(),
    )  # fmt: skip
    scheduler._last.pop("recover", None)
    await scheduler.run_pass()
    peer = await sync_to_async(SchedulerInstance.objects.get)(id="container")
    assert peer.stopped_at is None


async def test_a_dead_pid_on_this_node_is_recovered_at_once(scheduler, clock) -> None:
    from schedules.scheduler.instances import NODE

    await sync_to_async(SchedulerInstance.objects.create)(
        id="crashed", host=scheduler.host, pid=2**22 - 1, node=NODE, heartbeat_at=timezone.now()
    )
    await scheduler.run_pass()  # the first after the start: no heartbeat interval's wait
    peer = await sync_to_async(SchedulerInstance.objects.get)(id="crashed")
    assert peer.stopped_at is not None


async def test_a_killed_scheduler_not_yet_reaped_on_this_node_is_recovered_at_once(
    scheduler, clock
) -> None:
    """A supervisor that is slow to reap (or a container's first process, which may
    never) leaves the killed scheduler a zombie: it has still ended."""
    from schedules.scheduler.instances import NODE

    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        killed.send_signal(signal.SIGKILL)
        while not _is_zombie(killed.pid):
            await asyncio.sleep(0.01)
        await sync_to_async(SchedulerInstance.objects.create)(
            id="zombie", host=scheduler.host, pid=killed.pid, node=NODE,
            heartbeat_at=timezone.now(),
        )  # fmt: skip
        scheduler._last.pop("recover", None)
        await scheduler.run_pass()
        peer = await sync_to_async(SchedulerInstance.objects.get)(id="zombie")
        assert peer.stopped_at is not None
    finally:
        killed.wait()


def _is_zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[-1].split()[0] == "Z"


def test_a_heartbeat_slower_than_a_third_of_the_staleness_is_refused(settings) -> None:
    from schedules.conf import setting_problems

    settings.SILLO_HEARTBEAT_INTERVAL = 11
    settings.SILLO_STALE_AFTER = 30
    assert setting_problems() == [
        "SILLO_HEARTBEAT_INTERVAL must be at most a third of SILLO_STALE_AFTER (11 > 30 / 3)"
    ]


async def test_every_terminal_outcome_is_signalled_and_only_final_failures_as_failed(
    scheduler, clock
) -> None:
    from schedules.signals import run_failed, run_succeeded

    seen: list[tuple] = []

    def finished(sender, run, final, **kwargs):
        seen.append(("finished", run.schedule_code, run.status, run.attempt, final))

    def failed(sender, run, **kwargs):
        seen.append(("failed", run.schedule_code, run.attempt))

    def succeeded(sender, run, **kwargs):
        seen.append(("succeeded", run.schedule_code))

    run_finished.connect(finished)
    run_failed.connect(failed)
    run_succeeded.connect(succeeded)
    try:
        await create("flaky", "test.fail", every(3600), max_attempts=2, retry_delay=1)
        await create("fine", "test.echo", every(3600))
        await create("busy", "test.block_async", every(60), kwargs={"gate": "busy-signal"})
        clock.advance(3600)
        await scheduler.run_pass()
        # flaky's first attempt is recorded before time moves on (its retry counts from then).
        while not [r for r in await runs_of("flaky") if r.status == RunStatus.FAILED]:
            await asyncio.sleep(0.01)
        clock.advance(60)  # busy's next slot arrives while its run holds the instance
        await scheduler.run_pass()
        # The task may not have made its gate yet on a slow machine: open it either way.
        test_tasks.async_gates.setdefault("busy-signal", asyncio.Event()).set()
        await scheduler.wait_idle()
        clock.advance(1)
        await scheduler.run_pass()  # the retry of flaky
        await scheduler.wait_idle()
    finally:
        run_finished.disconnect(finished)
        run_failed.disconnect(failed)
        run_succeeded.disconnect(succeeded)
    assert ("finished", "flaky", "failed", 1, False) in seen
    assert ("finished", "flaky", "failed", 2, True) in seen
    assert [e for e in seen if e[0] == "failed"] == [("failed", "flaky", 2)]
    assert ("succeeded", "fine") in seen
    assert ("finished", "busy", "skipped", 1, True) in seen  # skipped at claim time


async def test_a_slow_receiver_never_delays_claims(scheduler, clock) -> None:
    import threading

    release = threading.Event()
    calls = []

    def slow(sender, run, **kwargs):
        calls.append(run.schedule_code)
        release.wait(10)

    run_finished.connect(slow)
    try:
        await create("first", "test.echo_async", every(60))
        clock.advance(60)
        await scheduler.run_pass()
        while not calls:
            await asyncio.sleep(0.01)  # the receiver holds its thread now
        clock.advance(60)
        await scheduler.run_pass()  # claims the next slot meanwhile
        for task in list(scheduler.in_flight.values()):
            await task
        assert len(await runs_of("first")) == 2
    finally:
        release.set()
        run_finished.disconnect(slow)
        await scheduler.wait_idle()


async def test_an_outcome_survives_a_long_database_outage(scheduler, clock, monkeypatch) -> None:
    real = outcomes.finish_runs
    failures = {"left": 12}

    def down(**kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise OperationalError("database is unavailable")
        return real(**kwargs)

    monkeypatch.setattr(outcomes, "finish_runs", down)
    await create("patient", "test.echo", every(60))
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    assert max(clock.waits) == 10  # the pause between tries is capped
    (run,) = await runs_of("patient")
    assert run.status == RunStatus.SUCCEEDED


async def test_a_run_whose_announcements_hang_still_runs_and_shutdown_still_ends(
    clock, transactional_db, settings, monkeypatch, every_group_listened
):
    """A slow channel layer (a busy Redis) neither holds a run's start nor its record,
    and a shutdown gives up on the announcements left (bounded)."""
    settings.SILLO_SHUTDOWN_GRACE = 0
    announced = asyncio.Event()

    async def hanging(events) -> None:
        announced.set()
        await asyncio.Event().wait()  # the channel layer does not answer

    monkeypatch.setattr("schedules.scheduler.announcer.publish_run_events", hanging)
    monkeypatch.setattr("schedules.scheduler.engine.ANNOUNCE_GRACE", 0.1)
    scheduler = Scheduler(clock=clock, executor=inline_executor())
    await scheduler.start()
    await create("announced", "test.echo", every(60))
    clock.advance(60)
    await scheduler.run_pass()
    await asyncio.wait_for(announced.wait(), 10)
    for _ in range(500):
        if [r.status for r in await runs_of("announced")] == [RunStatus.SUCCEEDED]:
            break
        await asyncio.sleep(0.01)
    await scheduler.shutdown()
    (run,) = await runs_of("announced")
    assert run.status == RunStatus.SUCCEEDED


@pytest.mark.django_db(transaction=True)
def test_an_interrupted_run_ends_when_its_scheduler_was_last_seen_not_at_the_restart() -> None:
    """A day down must not count as a day of the run's duration (the schedule page's
    p50/p95): its body ended with its scheduler, a heartbeat after it was last seen."""
    start = timezone.now() - timedelta(days=1)
    schedule = make_schedule("crashed", "test.echo", every(3600))
    SchedulerInstance.objects.create(id="dead", host="h", pid=1, heartbeat_at=start)
    quiet, chatty = (services.schedule_run_now(schedule=schedule) for _ in range(2))
    Run.objects.filter(pk__in=[quiet.pk, chatty.pk]).update(
        status=RunStatus.RUNNING, scheduler="dead", started_at=start - timedelta(seconds=3)
    )
    saved = start + timedelta(seconds=4)  # its output saved after the last heartbeat
    RunOutput.objects.create(run=chatty, text="x", total=1, updated_at=saved)
    restart = timezone.now()
    instances.recover_crashed(now=restart, stale_after=30, host="elsewhere")
    quiet, chatty = (Run.objects.get(pk=run.pk) for run in (quiet, chatty))
    assert quiet.status == chatty.status == RunStatus.INTERRUPTED
    assert (quiet.finished_at, chatty.finished_at) == (start, saved)
    assert quiet.duration == timedelta(seconds=3)
    schedule.refresh_from_db()
    assert schedule.last_duration == 7.0  # seconds, the latest of the two
