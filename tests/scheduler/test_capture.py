"""Captured output: what a run prints and logs is kept with it, capped, in every execution mode."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from schedules import services
from schedules.events import RunOutputEvent, run_group
from schedules.models import Run, RunOutput, RunStatus
from schedules.scheduler import retention
from schedules.scheduler.capture import OutputBuffer, PipeWriter, capturing
from schedules.scheduler.dispatch import execute_run
from schedules.scheduler.pool import PoolLimits, WorkerPool
from schedules.scheduler.streaming import OutputStream
from schedules.scheduler.worker import close_worker_runtime
from tests.factories import FakeClock, create, every, make_schedule, runs_of
from tests.taskapp import tasks as test_tasks


async def output_of(run: Run) -> RunOutput | None:
    return await sync_to_async(RunOutput.objects.filter(run=run).first)()


def assert_chatter(text: str, words: str) -> None:
    assert f"hello {words}\n" in text
    assert f"to stderr {words}\n" in text
    assert f"INFO tests.chatty: info {words}\n" in text
    assert f"WARNING tests.chatty: warning {words}\n" in text
    assert "debug is below the capture level" not in text


# ---------------------------------------------------------------- the buffer


def test_the_buffer_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    buffer = OutputBuffer(100)
    buffer.write("H" * 60)
    for _ in range(50):
        buffer.write("m" * 10)
    buffer.write("T" * 40)
    text = buffer.text()
    assert text.startswith("H" * 50 + "\n… [")
    assert text.endswith("\n" + "m" * 10 + "T" * 40)
    assert buffer.total == 600
    assert buffer.cut == 500
    assert "[500 characters cut]" in text


def test_the_live_stream_skips_what_piled_up_and_says_where_it_resumes() -> None:
    buffer = OutputBuffer(10_000_000)
    buffer.write("a" * 10)
    assert buffer.take_pending() == (0, "a" * 10)
    buffer.write("b" * 200_000)
    offset, text = buffer.take_pending()
    assert offset + len(text) == 200_010
    assert len(text) <= 130_000
    assert buffer.take_pending() == (200_010, "")


def test_concurrent_inline_runs_never_mix_their_output(capsys) -> None:
    first, second = OutputBuffer(1000), OutputBuffer(1000)
    with capturing(first, 20):
        print("one")
        with capturing(second, 20):
            print("two")
        print("one again")
    print("nobody's")
    assert (first.text(), second.text()) == ("one\none again\n", "two\n")
    assert sys.stdout is not None
    assert "nobody's" in capsys.readouterr().out


# ---------------------------------------------------------------- the modes


@pytest.mark.parametrize("task", ["test.chatty_inline", "test.chatty_async"])
async def test_an_inline_run_keeps_what_it_printed_and_logged(scheduler, clock, task) -> None:
    await create("talk", task, every(60), kwargs={"words": "inline"})
    await create("quiet", "test.echo", every(60))
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("talk")
    assert run.status == RunStatus.SUCCEEDED
    output = await output_of(run)
    assert_chatter(output.text, "inline")
    (quiet,) = await runs_of("quiet")
    assert await output_of(quiet) is None  # nothing written, nothing stored


async def test_a_run_that_prints_nothing_streams_nothing_and_one_that_prints_streams() -> None:
    async def db(*args, **kwargs) -> None:
        return None

    quiet, chatty = OutputBuffer(1000), OutputBuffer(1000)
    clock = FakeClock()
    streams = [OutputStream(n, out, db=db, clock=clock) for n, out in [(1, quiet), (2, chatty)]]
    chatty.write("hello\n")
    await asyncio.sleep(0)
    assert streams[0]._task is None
    assert streams[1]._task is not None and not streams[1]._task.done()
    for stream in streams:
        stream.stop()
    await asyncio.sleep(0)
    assert streams[1]._task.cancelled()
    quiet.write("too late\n")  # after the run ended: no stream starts
    await asyncio.sleep(0)
    assert streams[0]._task is None


def test_text_left_over_from_a_finished_run_is_not_the_next_runs() -> None:
    class Pipe:
        def __init__(self) -> None:
            self.sent: list[dict] = []

        def send(self, message: dict) -> None:
            self.sent.append(message)

    pipe = Pipe()
    writer = PipeWriter(pipe, threading.Lock())
    writer.begin_run()
    writer.write("first run\n")
    writer.end_run()
    writer.write("a thread the first run left behind\n")
    writer.begin_run()
    writer.write("second run\n")
    writer.end_run()
    assert pipe.sent == [{"output": "first run\n"}, {"output": "second run\n"}]


async def test_a_worker_keeps_each_runs_output_apart(settings) -> None:
    """One writer thread serves a worker's runs: what a run printed to its last
    moment goes with it, never with the next run on the same worker."""
    pool = WorkerPool(PoolLimits(min_workers=0, max_workers=1, backlog=0))
    try:
        for words in ("first", "second", "third"):
            texts: list[str] = []
            reply = await pool.run(
                "test.chatty", {"words": words, "lines": 200, "size": 50},
                result_limit=1000, output=texts.append, capture_level=20,
            )  # fmt: skip
            text = "".join(texts)
            assert reply["ok"]
            assert_chatter(text, words)
            assert text.count("line ") == 200
            assert all(other not in text for other in {"first", "second", "third"} - {words})
    finally:
        await pool.close()


async def test_a_worker_run_keeps_what_it_printed_and_logged(pooled, clock, settings) -> None:
    settings.SILLO_OUTPUT_LEVEL = "INFO"
    await create("talk", "test.chatty", every(60), kwargs={"words": "worker"})
    clock.advance(60)
    await pooled.run_pass()
    await pooled.wait_idle()
    (run,) = await runs_of("talk")
    assert run.status == RunStatus.SUCCEEDED
    output = await output_of(run)
    assert_chatter(output.text, "worker")
    assert (output.total, output.cut) == (len(output.text), 0)


async def test_a_run_killed_at_its_timeout_keeps_its_output_until_then(pooled, clock) -> None:
    await create("slow", "test.chatty", every(60), timeout=1, kwargs={"words": "late", "hold": 30})
    clock.advance(60)
    await pooled.run_pass()
    await pooled.wait_idle()
    (run,) = await runs_of("slow")
    assert run.status == RunStatus.TIMED_OUT
    output = await output_of(run)
    assert_chatter(output.text, "late")
    # It printed every 0.1 s until it was killed: the last of those lines is kept.
    assert output.text.count("still running\n") >= 5


async def test_output_over_the_cap_keeps_head_and_tail(pooled, clock, settings) -> None:
    settings.SILLO_OUTPUT_MAX_CHARS = 2_000
    await create("loud", "test.chatty", every(60), kwargs={"lines": 1000, "size": 100})
    clock.advance(60)
    await pooled.run_pass()
    await pooled.wait_idle()
    (run,) = await runs_of("loud")
    output = await output_of(run)
    assert output.text.startswith("hello there\n")
    assert output.text.endswith("line 999 " + "x" * 100 + "\n")
    assert output.total > 100_000
    assert output.cut == output.total - 2_000
    assert f"[{output.cut:,} characters cut]" in output.text
    assert len(output.text) < 2_100


async def test_capture_off_stores_nothing(scheduler, clock, settings) -> None:
    settings.SILLO_OUTPUT_MAX_CHARS = 0
    await create("talk", "test.chatty_inline", every(60))
    clock.advance(60)
    await scheduler.run_pass()
    await scheduler.wait_idle()
    (run,) = await runs_of("talk")
    assert run.status == RunStatus.SUCCEEDED
    assert await output_of(run) is None


async def test_a_running_run_streams_its_output_to_its_page_group(scheduler, clock) -> None:
    await create("talk", "test.chatty_async", every(60), kwargs={"gate": "stream"})
    clock.advance(60)
    await scheduler.run_pass()
    (run,) = await runs_of("talk")
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(run_group(run.pk), channel)
    # Written before we joined: the streamer sends it on its next tick (real time).
    message = await asyncio.wait_for(layer.receive(channel), 5)
    event = RunOutputEvent.unmarshal(message)
    assert (event.run_id, event.offset) == (run.pk, 0)
    assert "hello there" in event.text
    test_tasks.async_gates["stream"].set()
    await scheduler.wait_idle()
    last = RunOutputEvent.unmarshal(await asyncio.wait_for(layer.receive(channel), 5))
    assert last.text == "bye there\n"
    assert last.offset == len(event.text)


@pytest.mark.django_db(transaction=True)
def test_a_django_tasks_worker_run_keeps_its_output() -> None:
    try:
        schedule = make_schedule("report", "test.django_chatty", every(3600))
        run = services.schedule_run_now(schedule=schedule)
        execute_run.call(run.pk)  # what the backend's worker does
        run.refresh_from_db()
        assert run.status == RunStatus.SUCCEEDED
        assert_chatter(run.captured.text, "there")
    finally:
        close_worker_runtime()


def test_output_goes_with_its_run_under_retention(db) -> None:
    schedule = make_schedule("kept", "test.echo", every(60))
    runs = [
        Run.objects.create(
            schedule=schedule,
            schedule_code="kept",
            task_name="test.echo",
            reason="scheduled",
            status=RunStatus.SUCCEEDED,
        )  # fmt: skip
        for _ in range(3)
    ]
    for run in runs:
        RunOutput.objects.create(run=run, text="said", total=4)
    retention.prune_runs(schedule_id=schedule.pk, keep=1)
    assert list(RunOutput.objects.values_list("run_id", flat=True)) == [runs[-1].pk]
