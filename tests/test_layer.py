"""A hung channel layer (Redis stopped, not refusing) costs a hint, never a stuck request.

Every send to the layer is a hint: schedule changes to live pages, wake-ups to the
schedulers. Each gives up after `SEND_TIMEOUT`, logs one warning and lets the
caller go on. The scheduler's side is in tests/scheduler/test_lifecycle.py.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from schedules import layer as layer_module
from schedules.models import Schedule
from tests.factories import every, make_schedule


@pytest.fixture
def hung_layer(every_group_listened, monkeypatch):
    """Every send waits for ever, as to a Redis that accepts connections and never answers."""
    layer = every_group_listened

    async def never(*args, **kwargs):
        await asyncio.Event().wait()

    monkeypatch.setattr(layer, "group_send", never)
    monkeypatch.setattr(layer, "send", never)
    monkeypatch.setattr("schedules.layer.SEND_TIMEOUT", 0.2)
    return layer


def finishes(call, *, seconds: float = 20.0) -> None:
    """`call` returns (a hang would leave the thread running): a test that cannot hang."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            call()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "still waiting on the channel layer"
    assert not errors, errors


def test_a_schedule_change_is_saved_and_returns_though_the_layer_hangs(
    transactional_db, hung_layer, caplog
) -> None:
    finishes(lambda: make_schedule("unheard", "test.echo", every(60)))
    assert Schedule.objects.filter(code="unheard").exists()
    assert "schedule event for unheard not published: the channel layer did not answer" in (
        caplog.text
    )


def test_after_a_send_times_out_hints_are_skipped_for_a_while(
    transactional_db, hung_layer, caplog, monkeypatch
) -> None:
    """A bulk action over many schedules pays the timeout once, not once a hint."""
    import schedules.layer

    clock = [1000.0]
    monkeypatch.setattr(schedules.layer, "_now", lambda: clock[0])
    finishes(lambda: make_schedule("first", "test.echo", every(60)))
    waited = caplog.text.count("did not answer")
    assert waited == 1  # the schedule event; its wake-up was skipped
    finishes(lambda: [make_schedule(f"more{i}", "test.echo", every(60)) for i in range(20)])
    assert caplog.text.count("did not answer") == waited  # all skipped: no wait at all
    clock[0] += schedules.layer.QUIET
    finishes(lambda: make_schedule("later", "test.echo", every(60)))
    assert caplog.text.count("did not answer") == waited + 1  # tried again, after the quiet


def test_a_broken_layer_is_one_warning_and_no_error(
    transactional_db, every_group_listened, monkeypatch, caplog
) -> None:
    layer = every_group_listened

    async def refused(*args, **kwargs):
        raise ConnectionRefusedError("redis is down")

    monkeypatch.setattr(layer, "group_send", refused)
    monkeypatch.setattr(layer, "send", refused)
    make_schedule("refused", "test.echo", every(60))
    assert "schedule event for refused not published: redis is down" in caplog.text
    # Tried too (a refusal costs no quiet period), and counted rather than logged again.
    assert "wake-up for the schedulers not sent" not in caplog.text
    assert layer_module.refusals.since == 1


def test_refusals_are_one_warning_every_report_interval_with_the_count_between(
    transactional_db, every_group_listened, monkeypatch, caplog
) -> None:
    """Redis down made three warnings a run: each event, each group."""
    layer = every_group_listened
    clock = [1000.0]
    monkeypatch.setattr(layer_module, "_now", lambda: clock[0])

    async def refused(*args, **kwargs):
        raise ConnectionRefusedError("redis is down")

    monkeypatch.setattr(layer, "group_send", refused)
    monkeypatch.setattr(layer, "send", refused)
    for code in ("a", "b", "c"):
        make_schedule(code, "test.echo", every(60))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == ["schedule event for a not published: redis is down"]
    clock[0] += layer_module.REPORT_EVERY
    make_schedule("d", "test.echo", every(60))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings[-1] == (
        "schedule event for d not published: redis is down (and 5 more lost since the last warning)"
    )


async def test_a_batch_to_many_groups_is_bounded_per_send_not_as_a_whole(
    every_group_listened, monkeypatch, caplog
) -> None:
    """A batch of run events goes to up to hundreds of schedule groups: a layer that
    answers each send, slowly, must not be taken for a hung one."""
    from schedules.layer import send_to_each_group

    layer, sent = every_group_listened, []

    async def slow(group, message):
        await asyncio.sleep(0.05)
        sent.append(group)

    monkeypatch.setattr(layer, "group_send", slow)
    monkeypatch.setattr("schedules.layer.SEND_TIMEOUT", 0.2)
    monkeypatch.setattr("schedules.layer._quiet_until", 0.0)
    groups = [f"g{i}" for i in range(8)]  # 0.4 s in all: twice one send's bound
    await send_to_each_group({group: {"type": "x"} for group in groups}, what="a batch")
    assert sent == groups
    assert "did not answer" not in caplog.text
