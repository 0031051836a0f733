"""The scheduler loop: small steps on one event loop, each safe to repeat.

A pass heartbeats, recovers runs of dead schedulers, syncs code defaults,
claims due slots and queued runs, and launches them; then the loop sleeps
until the next due instant, a wake hint, or the resync interval. A failing
pass is logged and retried with backoff: the loop never dies.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from django.db import connections

from .. import services
from ..conf import setting
from ..models import Dispatch, Run, RunReason, RunStatus
from ..registry import Registry, registry
from ..wake import wake_schedulers
from . import claims, hints, instances, outcomes, queued
from .announcer import Announcer
from .checkpoints import CHECKPOINT_INTERVAL, Checkpointer, leave_to_the_checkpointer
from .clock import Clock, SystemClock
from .dbcalls import db_call, despite_cancel
from .executor import (
    SHUT_DOWN,
    Executor,
    NotStarted,
    Outcome,
    context_for,
    default_pool,
    new_output,
)
from .held import HeldRuns
from .hooks import Hooks
from .lead import LONGEST, ClaimCost, Crowd
from .pace import Backlog
from .pruner import Pruner
from .recorder import OutcomeRecorder
from .streaming import OutputStream

logger = logging.getLogger(__name__)

MAX_BACKOFF = 30.0
# While runs are in flight, how often to look for runs another process ended
# (an operator's cancel, a replace): a cancel takes effect within this plus the kill grace.
CANCEL_CHECK_INTERVAL = 0.5
# While runs are held for a worker, how often a pass looks for other queued runs to
# hold: they wait behind the held line anyway (a better priority jumps it this late).
HOLD_CHECK_INTERVAL = 0.5
# While runs are held for a worker, passes come at most this often: a slot due meanwhile
# waits behind the held line anyway, and a pass per slot of a steady load would take the
# database thread from starting the held runs (a better priority jumps it this late).
HELD_PASS_INTERVAL = 0.05
# How often the loop looks for a crowd of slots due soon, and how far ahead (lead.py).
CROWD_LOOK_INTERVAL = 0.25
CROWD_LOOK_AHEAD = timedelta(seconds=LONGEST + CROWD_LOOK_INTERVAL)
# After shutdown's grace, how long stopped runs may take to have their outcome written.
RECORD_GRACE = 4.0
# How long shutdown waits for run announcements still unsent (a hung channel layer).
ANNOUNCE_GRACE = 2.5


class Scheduler:
    def __init__(
        self,
        *,
        clock: Clock | None = None,
        tasks: Registry = registry,
        instance_id: str | None = None,
        executor: Executor | None = None,
        kind: str = "scheduler",
    ) -> None:
        self.kind = kind
        self.clock = clock or SystemClock()
        self.tasks = tasks
        self.instance_id = instance_id or uuid.uuid4().hex[:16]
        self.host = socket.gethostname()
        self.executor = executor or Executor(
            pool=default_pool(), sync_workers=setting("SILLO_SYNC_WORKERS")
        )
        # One thread for the scheduler's own queries, apart from web requests and tasks;
        # SQLite's checkpoints happen on a thread of their own (checkpoints.py).
        self._db_pool = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="sillo-db", initializer=leave_to_the_checkpointer
        )
        self.checkpointer = Checkpointer()
        self.pruner = Pruner()
        self._wake = asyncio.Event()
        self._stopping = False
        self._started = False
        self.up_since: datetime | None = None
        self.in_flight: dict[int, asyncio.Task] = {}
        self.launched = 0  # runs launched since start; in_flight loses those that ended
        # Runs claimed ahead, waiting for their slot (SILLO_CLAIM_AHEAD): a shutdown
        # lets them begin before it stops runs from taking a worker.
        self._slot_waits: dict[int, asyncio.Future] = {}  # run id -> its wait
        self._claimed_by = datetime.min.replace(tzinfo=UTC)  # the last claim's horizon
        self.claim_cost = ClaimCost()
        self._crowd: Crowd | None = None  # slots due together, claimed from earlier (lead.py)
        self._claimed_any = False  # whether it claimed any slot (more may be due)
        # Launched runs that need a worker process, from their claim until their body ends:
        # a run counts against the pool before its task has reached `acquire`.
        self._worker_runs: set[int] = set()
        self._last: dict[str, float] = {}  # step -> monotonic time it last ran
        self.recorder = OutcomeRecorder(
            db=self.db, clock=self.clock, gather=self.runs_wait, others=self._others_in_flight
        )
        self.executor.worker_taken = self.gathering_may_end
        self.hooks = Hooks()
        self.announcer = Announcer()
        # Runs are queued for want of a free worker: a finished run wakes the loop.
        self._waiting_for_worker = False
        self.held = HeldRuns(self)
        pool = self.executor.pool
        limits = pool.limits if pool is not None else None
        self.backlog = Backlog(
            limit=limits.backlog if limits else 0, floor=limits.max_workers if limits else 0
        )
        # Runs whose body ended here and whose outcome is not yet written: no longer
        # executing, whatever the database says (max_instances counts them out).
        self.unrecorded: set[int] = set()
        self.passes = 0
        # The queue is read when something may have changed it (queue_changed), when
        # its earliest run is due, or every SILLO_POLL_INTERVAL (a run queued elsewhere
        # whose wake hint was lost); not on every pass: under a steady load passes come
        # every few milliseconds and the queue is usually empty.
        self._queue_changes = 1
        self._queue_seen = 0  # _queue_changes as of the last look
        self._next_queued: datetime | None = None  # its earliest run's time, as last read

    # -------------------------------------------------------------- plumbing

    async def db(self, fn: Callable[..., Any], **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._db_pool, partial(db_call, fn, kwargs))

    def wake(self) -> None:
        self._wake.set()

    def hint(self) -> None:
        """Another process changed something (a schedule, a run now, a cancel): look at
        once, cancelled runs and the queue included."""
        self._last.pop("cancel-check", None)
        self.queue_changed()

    def queue_changed(self, *, wake: bool = True) -> None:
        """A run may have been queued (or freed to start): the next pass reads the queue
        (without `wake`: the pass under way, which reads it next)."""
        self._queue_changes += 1
        if wake:
            self.wake()

    def _queue_due(self, now: datetime) -> bool:
        at = self.clock.monotonic()
        due = (
            self._queue_changes != self._queue_seen
            or (self._next_queued is not None and self._next_queued <= now)
            or self._until_queue_look() <= 0
        )
        if due:
            self._last["queue-look"] = at
        return due

    def _until_queue_look(self) -> float:
        since = self.clock.monotonic() - self._last.get("queue-look", float("-inf"))
        return setting("SILLO_POLL_INTERVAL") - since

    def _due(self, step: str, every: float, now: datetime | None = None) -> bool:
        """Whether `every` seconds passed since `step` last ran, on the monotonic clock
        (a wall clock that steps back must not stop heartbeats)."""
        at = self.clock.monotonic()
        last = self._last.get(step)
        if last is None or at - last >= every:
            self._last[step] = at
            return True
        return False

    def _checkpoint_if_due(self) -> None:
        if self._due("checkpoint", CHECKPOINT_INTERVAL):
            self.checkpointer.start()  # beside the database thread, never waited for

    def local_in_flight(self) -> dict[int, int]:
        """Sync threads of this process that outlived their timeout, per schedule."""
        return self.executor.lingering_counts()

    # -------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        if self._started:
            return
        # Workers first: the instance is registered (and counts as up) once it can run work.
        await self.executor.start()
        now = self.clock.now()
        await self.db(
            instances.register_instance,
            instance_id=self.instance_id,
            host=self.host,
            pid=os.getpid(),
            now=now,
            kind=self.kind,
        )
        self._last["heartbeat"] = self.clock.monotonic()
        self.up_since = now  # a skipped slot that fell due since then may still run
        self._started = True
        hints.register(self)
        logger.info("scheduler %s started on %s pid %s", self.instance_id, self.host, os.getpid())

    async def run_forever(self, stop: asyncio.Event) -> None:
        """Passes until `stop` is set; then a graceful shutdown."""
        await self._retrying(self.start, stop)
        backoff = 1.0
        while not stop.is_set():
            try:
                delay = await self.run_pass()
                backoff = 1.0
            except Exception:
                logger.exception("scheduler pass failed; retrying in %.0fs", backoff)
                delay, backoff = backoff, min(backoff * 2, MAX_BACKOFF)
            if stop.is_set():
                break
            waiter = asyncio.ensure_future(self.clock.wait(delay, self._wake))
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            stopper.cancel()
        await self.shutdown()

    async def _retrying(self, step: Callable, stop: asyncio.Event) -> None:
        backoff = 1.0
        while not stop.is_set():
            try:
                await step()
                return
            except Exception:
                logger.exception("scheduler start failed; retrying in %.0fs", backoff)
                await self.clock.wait(backoff, self._wake)
                backoff = min(backoff * 2, MAX_BACKOFF)

    async def shutdown(self) -> None:
        """Stop claiming, give runs a grace period, cancel the rest, record all."""
        self._stopping = True
        self.recorder.hurry()
        hints.unregister(self)
        # Runs claimed ahead are this process's like any started run: they begin at
        # their slot (two leads from now at most, a second for a crowd), within the
        # grace. Given back to the queue, a slot due at the stop would run whenever a
        # scheduler next started, past its misfire rules.
        if self._slot_waits:
            await asyncio.wait(list(self._slot_waits.values()))
        # Runs still waiting for a worker go back to the queue at once, for a peer (or
        # the next start) to run: started now, the grace could end them half done.
        self.executor.stop_starting()
        await self.held.release_all()
        tasks = list(self.in_flight.values())
        if tasks:
            grace = setting("SILLO_SHUTDOWN_GRACE")
            logger.info("waiting up to %.0fs for %d run(s)", grace, len(tasks))
            done, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel(SHUT_DOWN)
            if pending:
                # Their outcomes are being written; bounded, so the process exits even
                # if the database is gone (the next scheduler marks them interrupted).
                _, unrecorded = await asyncio.wait(pending, timeout=RECORD_GRACE)
                if unrecorded:
                    logger.error("%d run(s) stopped unrecorded", len(unrecorded))
        try:
            await self.db(
                instances.stop_instance, instance_id=self.instance_id, now=self.clock.now()
            )
        except Exception:
            logger.exception("could not mark scheduler %s stopped", self.instance_id)
        await self.executor.shutdown()
        await self.hooks.drain()
        await self.announcer.close(timeout=ANNOUNCE_GRACE)
        self.hooks.shutdown()
        await self.pruner.close()
        await self.checkpointer.close()
        self._db_pool.submit(connections.close_all)
        self._db_pool.shutdown(wait=True)
        logger.info("scheduler %s stopped", self.instance_id)

    # -------------------------------------------------------------- one pass

    async def run_pass(self) -> float:
        """One round of work; returns how long to sleep before the next."""
        self.passes += 1
        now = self.clock.now()
        if self._due("heartbeat", setting("SILLO_HEARTBEAT_INTERVAL"), now):
            await self._heartbeat(now)
        # Not tied to the heartbeat (registering counts as the first): the first pass
        # recovers too, so a restart after kill -9 ends the killed one's runs at once.
        if self._due("recover", setting("SILLO_HEARTBEAT_INTERVAL"), now):
            for run in await self.db(
                instances.recover_crashed,
                now=now,
                stale_after=setting("SILLO_STALE_AFTER"),
                host=self.host,
            ):
                self.hooks.finished(run, final=True)
                self.announcer.announce(run)
                self.queue_changed(wake=False)  # a dead scheduler's queued runs are anyone's
        if self._due("cancel-check", CANCEL_CHECK_INTERVAL):
            # Not every pass: under a steady load passes come every few milliseconds,
            # and a burst's runs in flight would be read again by each.
            await self._notice_cancelled()
        self._checkpoint_if_due()
        if not self.pruner.running and self._due("prune", setting("SILLO_PRUNE_INTERVAL"), now):
            self.pruner.start_round(now)
        if self._due("sync", setting("SILLO_RESYNC_INTERVAL"), now):
            await self.db(services.sync_code_defaults, tasks=self.tasks, now=now)
            for name in sorted(self.tasks.duplicate_names()):
                refusal = self.tasks.refusal(name)
                logger.warning("%s: none of them runs until it is renamed", refusal)

        looked = None
        if not self._stopping:
            looked = await self._claim(now)
        if self.executor.pool is not None:
            self.executor.pool.trim()
        return await self._sleep_after_pass(looked)

    async def _claim(self, now: datetime) -> int | None:
        """Claim due slots, then queued runs, as the workers allow; launch them.

        Returns the queue changes seen if the queue was read (its earliest time is
        then read again after the pass), else None."""
        slots = self._worker_slots()
        self._claimed_by = now + self._claim_horizon()
        crowd = self._crowd
        if crowd is not None and now >= crowd.start:
            self._claimed_by = max(self._claimed_by, crowd.until)
        if len(self.held):
            # New slots wait behind the held runs (priority, then arrival).
            slots = claims.WorkerSlots(0, self.needs_worker)
        began = time.perf_counter()  # real time: the cost per slot is the database's
        runs, replaced = await self.db(
            claims.claim_due,
            now=now,
            instance_id=self.instance_id,
            tasks=self.tasks,
            limit=setting("SILLO_CLAIM_BATCH"),
            max_catch_up=setting("SILLO_MAX_CATCH_UP"),
            local_in_flight=self.local_in_flight(),
            slots=slots,
            ended=set(self.unrecorded),
            up_since=self.up_since,
            due_by=self._claimed_by,
        )
        self.claim_cost.noted(time.perf_counter() - began, len(runs))
        self._claimed_any = bool(runs)
        # Set before anything is launched: a run that finishes while this pass
        # still awaits the database must wake the loop for the runs left queued.
        self._waiting_for_worker = slots.free == 0
        # Due runs start before the queue is read: their slot is now.
        await self.cancel_local(replaced, claims.REPLACED)
        for run in runs:
            self.launch(run)
            # Queued for want of a worker: started as workers free up.
            held = self.held.hold(run)
            if _may_have_queued(run, held):
                self.queue_changed(wake=False)  # this pass reads the queue next
        looked = self._queue_due(now)
        seen = self._queue_changes
        if looked and self._may_start_queued(slots):
            waited, replaced = await self.db(
                queued.claim_queued,
                now=now,
                instance_id=self.instance_id,
                tasks=self.tasks,
                limit=setting("SILLO_CLAIM_BATCH"),
                local_in_flight=self.local_in_flight(),
                slots=slots,
                held=self.held.ids(),
                ended=set(self.unrecorded),
            )
            self._waiting_for_worker = slots.free == 0
            await self.cancel_local(replaced, claims.REPLACED)
            for run in waited:
                self.launch(run)
        if (
            self._waiting_for_worker
            and self.executor.pool is not None
            and (not len(self.held) or self._due("hold-check", HOLD_CHECK_INTERVAL))
        ):
            # Queued runs that wait for a worker join the held ones, so the best
            # priority starts first whoever queued it (a retry, a manual run).
            for run in await self.db(
                queued.to_hold,
                now=now,
                task_names=[n for n in self.tasks.runnable_names() if self.needs_worker(n)],
                held=self.held.ids(),
                limit=self.held.room(),
            ):
                self.held.hold(run)
        self.held.refill()
        return seen if looked else None

    def _may_start_queued(self, slots: claims.WorkerSlots) -> bool:
        """Whether a queued run could start now: a worker is free, or a task runs inline.
        (While a burst waits for workers, passes come often: each would read the queue.)"""
        return slots.free != 0 or not all(map(self.needs_worker, self.tasks.runnable_names()))

    def _worker_slots(self) -> claims.WorkerSlots:
        pool = self.executor.pool
        if pool is None:
            return claims.UNLIMITED
        return claims.WorkerSlots(
            max(0, self.worker_capacity() - len(self._worker_runs)), self.needs_worker
        )

    def worker_capacity(self) -> int:
        """Runs that may be launched in workers at once: one per worker, plus the
        backlog that waits in the scheduler at the workers' pace (pace.py)."""
        pool = self.executor.pool
        return pool.limits.max_workers + self.backlog.size() if pool is not None else 0

    @staticmethod
    def _claim_ahead() -> timedelta:
        """The lead: the loop wakes this long before the next slot."""
        return timedelta(seconds=setting("SILLO_CLAIM_AHEAD"))

    @classmethod
    def _claim_horizon(cls) -> timedelta:
        """How far ahead a pass claims: two leads (never past lead.LONGEST, unless the
        lead itself is longer). Woken a lead before the next slot, a pass under a steady
        load so takes a lead's worth of slots rather than one: a claim costs about 5 ms
        of the ORM's Python however few slots it takes, and a pass for every slot of a
        100 runs/s load kept the database thread busy most of a core."""
        lead = cls._claim_ahead()
        return min(2 * lead, max(lead, timedelta(seconds=LONGEST)))

    def _claim_from(self, slot: datetime) -> datetime:
        """When to claim `slot`: SILLO_CLAIM_AHEAD before it, or from the start of the
        crowd it is part of."""
        start = slot - self._claim_ahead()
        crowd = self._crowd
        if crowd is not None and slot <= crowd.until:
            start = min(start, crowd.start)
        return start

    async def _look_for_crowd(self, next_at: datetime | None) -> None:
        """Look for a crowd (lead.py) among the slots due from the next one on. Before a
        sleep longer than CROWD_LOOK_INTERVAL always; under a steady load, with a pass
        every few milliseconds, at most that often (one indexed read of a second's
        slots). A crowd past the window is seen by the pass that sleeps until the slot
        before it."""
        base = self._claim_ahead()
        if next_at is None or not base:
            self._crowd = None
            return
        soon = next_at - self.clock.now() <= base + timedelta(seconds=CROWD_LOOK_INTERVAL)
        if not self._due("crowd-look", CROWD_LOOK_INTERVAL) and soon:
            return
        slots = await self.db(
            claims.slots_due,
            by=next_at + base + CROWD_LOOK_AHEAD,
            tasks=self.tasks,
            limit=self.claim_cost.within(),
        )
        self._crowd = self.claim_cost.crowd(slots, base)

    def needs_worker(self, task_name: str) -> bool:
        return self.executor.in_worker(self.tasks.get(task_name))

    async def _sleep_after_pass(self, looked: int | None = None) -> float:
        """Until the next slot or queued run (queued ones only if a worker is free), the
        next look at the queue (a poll interval at most), and the next look for
        cancelled runs while runs are in flight; at least HELD_PASS_INTERVAL while runs
        are held. `looked`: the queue changes seen if this pass read the queue."""
        read_queue = looked is not None and not self._waiting_for_worker
        next_at, queued_at = await self.db(
            claims.next_times, tasks=self.tasks, include_queued=read_queue, held=self.held.ids()
        )
        await self._look_for_crowd(next_at)
        if next_at is not None and (next_at > self._claimed_by or self._claimed_any):
            next_at = self._claim_from(next_at)  # claimed ahead, started at its instant
        # Else this pass claimed nothing and left it (its schedule at max_instances):
        # the pass at its instant claims it, rather than passes back to back until then.
        # (A pass that claimed some is followed at once: the batch may have been full.)
        if looked is not None:
            # Read by claim_queued, or nothing could start (every runnable task needs a
            # worker, none is free): a freed worker or the hold check signals it then.
            self._queue_seen = looked
        if read_queue:
            self._next_queued = queued_at
        elif self._waiting_for_worker:
            self._next_queued = None  # they wait for a worker: a finished run wakes the loop
        if self._next_queued is not None:
            next_at = min(next_at, self._next_queued) if next_at else self._next_queued
        # In time for the next look at the queue: a run queued elsewhere whose hint was
        # lost starts within a poll interval, however the passes fall.
        delay = min(setting("SILLO_RESYNC_INTERVAL"), max(0.0, self._until_queue_look()))
        if next_at is not None:
            delay = max(0.0, min(delay, (next_at - self.clock.now()).total_seconds()))
        if self.in_flight:  # in time for the next look for runs ended elsewhere
            since = self.clock.monotonic() - self._last.get("cancel-check", float("-inf"))
            delay = min(delay, max(0.0, CANCEL_CHECK_INTERVAL - since))
        if len(self.held):
            delay = max(delay, HELD_PASS_INTERVAL)
        return delay

    async def wait_idle(self) -> None:
        """Wait until every run this scheduler launched has been recorded (and a
        round of retention under way has ended)."""
        while self.in_flight:
            await asyncio.wait(list(self.in_flight.values()))
        await self.pruner.wait()
        await self.hooks.drain()

    async def _heartbeat(self, now: datetime) -> None:
        if not await self.db(instances.heartbeat, instance_id=self.instance_id, now=now):
            # The record was deleted or marked stopped while we were alive: say so again.
            logger.warning("scheduler %s was marked gone; registering again", self.instance_id)
            self._started = False
            await self.start()

    async def heartbeat_forever(self) -> None:
        """Keep this instance alive between runs, and stop runs that were cancelled
        meanwhile (a django.tasks worker's runtime has no passes)."""
        while True:
            await self.clock.wait(CANCEL_CHECK_INTERVAL, asyncio.Event())
            try:
                now = self.clock.now()
                if self._due("heartbeat", setting("SILLO_HEARTBEAT_INTERVAL"), now):
                    await self._heartbeat(now)
                self._checkpoint_if_due()
                await self._notice_cancelled()
            except Exception:
                logger.exception("heartbeat of %s failed", self.instance_id)

    async def run_queued(
        self, run_id: int, dispatch_kind: str = "inline", *, reserved: bool = False
    ) -> None:
        """Claim and execute one queued run now, and wait for it (`reserved`: a run
        the other schedulers leave to this one, see claim_queued)."""
        runs, replaced = await self.db(
            queued.claim_queued,
            now=self.clock.now(),
            instance_id=self.instance_id,
            tasks=self.tasks,
            limit=1,
            local_in_flight=self.local_in_flight(),
            only=run_id,
            dispatch_kind=dispatch_kind,
            reserved=reserved,
        )
        await self.cancel_local(replaced, claims.REPLACED)
        for run in runs:
            self.launch(run)
        await self.wait_idle()

    async def _notice_cancelled(self) -> None:
        """Cancel local runs that another process replaced or marked interrupted."""
        # A run whose body ended here is left out: its outcome, being written, finds
        # whether another process ended it first.
        ids = [run_id for run_id in self.in_flight if run_id not in self.unrecorded]
        if not ids:
            return
        alive = await self.db(outcomes.still_running, run_ids=ids)
        await self.cancel_local([i for i in ids if i not in alive], "ended by another process")

    async def cancel_local(self, run_ids: list[int], why: str) -> None:
        """Stop these runs of this process and wait until they no longer execute.

        A run in a worker is stopped with its worker, so a run started after
        this (a replacement) never executes beside it.
        """
        stopping = []
        for run_id in run_ids:
            task = self.in_flight.get(run_id)
            if task is not None:
                logger.info("cancelling run %s: %s", run_id, why)
                task.cancel(why)
                stopping.append(task)
        if stopping:
            await asyncio.wait(stopping)

    def launch(self, run: Run) -> None:
        """Execute a claimed run, or report one that ended or waits at claim time."""
        if run.status != RunStatus.RUNNING:
            self.hooks.finished(run, final=True)  # skipped at claim time (queued: no-op)
            self.announcer.announce(run)
            return
        task = asyncio.create_task(self._execute(run), name=f"run-{run.pk}")
        self.in_flight[run.pk] = task
        self.launched += 1
        if self.needs_worker(run.task_name):
            self._worker_runs.add(run.pk)
        task.add_done_callback(partial(self._forget, run.pk))

    def launched_in_workers(self) -> int:
        """Runs launched that need a worker process and have not yet ended."""
        return len(self._worker_runs)

    def _release_worker_slot(self, run_id: int) -> None:
        if run_id in self._worker_runs:
            self._worker_runs.discard(run_id)
            self.backlog.finished()
            self._worker_freed()

    def _worker_freed(self) -> None:
        """Held runs start as workers free up; other waiting runs need a pass."""
        if len(self.held):
            self.held.refill()
        elif self._waiting_for_worker:
            self.queue_changed()  # a queued run may start now
        self.gathering_may_end()

    def runs_wait(self) -> bool:
        """Whether runs wait for a worker: held, or launched and not yet in a worker
        (on their way to the pool's line, or in it), leaving out runs claimed ahead
        that wait for their slot.

        Outcomes gather meanwhile (recorder.py): the last runs of a burst reach
        their workers before the loop and the database thread turn to the burst's
        outcomes. A run that takes a worker ends the gathering if it was the last.
        (Counted in, the runs claimed ahead of a steady load kept outcomes gathering
        for seconds: 400 written at once held the database thread, and the claims
        behind them, for 0.2 s on PostgreSQL.)"""
        pool = self.executor.pool
        if self._stopping or pool is None:
            return False
        if len(self.held):
            return True
        launched = self.launched_in_workers()
        if self._slot_waits:
            launched -= len(self._worker_runs & self._slot_waits.keys())
        return launched > pool.busy

    def _others_in_flight(self) -> bool:
        """Whether runs are in flight beyond those whose bodies ended (their outcomes
        wait to be written): whether a write held back may take more outcomes."""
        return len(self.in_flight) > len(self.unrecorded)

    def gathering_may_end(self) -> None:
        if not self.runs_wait():
            self.recorder.stop_gathering()

    def _forget(self, run_id: int, _task: asyncio.Task) -> None:
        # No wake here: a catch-up run waiting for a free instance is queued with
        # its own recheck time, which the next sleep already honours; waking on
        # every finished run only cost an empty pass just before the next slot.
        self.in_flight.pop(run_id, None)
        if run_id in self._worker_runs:
            self._worker_runs.discard(run_id)
            self._worker_freed()
        elif self._waiting_for_worker:
            self.queue_changed()

    # -------------------------------------------------------------- a run

    async def _until_slot(self, run: Run) -> None:
        """A slot claimed ahead starts at its instant."""
        if run.slot is None or run.slot <= self.clock.now():
            return
        wait = asyncio.ensure_future(_wait_for(self.clock, run.slot))
        self._slot_waits[run.pk] = wait
        wait.add_done_callback(lambda _: self._slot_waits.pop(run.pk, None))
        try:
            # The run's own step resumes before a shutdown waiting on this (asyncio wakes
            # in order): it takes an idle worker before the shutdown stops runs taking one.
            await wait
        except asyncio.CancelledError:
            run.started_at = None  # it never began (written with its outcome)
            raise
        # When it began, written with its outcome: the claim wrote the slot, and a loop
        # that wakes late must show in the run's lateness.
        run.started_at = self.clock.now()

    async def _execute(self, run: Run) -> None:
        declaration = self.tasks.get(run.task_name)
        context = context_for(run, run.schedule)
        output = new_output()
        stream = None
        try:
            await self._until_slot(run)
            self.hooks.started(run)
            # Announced beside the run, not before it: a slow channel layer must not delay
            # the body, and runs launched together reach the workers in launch (priority)
            # order rather than in the order their announcements return.
            self.announcer.announce(run)
            if output is not None:
                stream = OutputStream(run.pk, output, db=self.db, clock=self.clock)
            outcome = await self.executor.execute(
                declaration, context, output, priority=_priority(run)
            )
        except (asyncio.CancelledError, NotStarted) as exc:
            why = exc.args[0] if exc.args else SHUT_DOWN
            if isinstance(exc, NotStarted) and self._stopping and why == SHUT_DOWN and exc.args:
                why = "its scheduler shut down before a worker took it; queued again"
                outcome = Outcome(RunStatus.QUEUED, why, retry_in=0)  # never began
            else:  # stopped mid-run, or an operator's cancel, a replace, a CLI interrupted
                outcome = Outcome(RunStatus.CANCELLED, str(why), output=output)
        finally:
            if stream is not None:
                stream.stop()
        outcome.ended_at = self.clock.now()
        self._release_worker_slot(run.pk)  # the next run may start while this one is recorded
        self.unrecorded.add(run.pk)
        try:
            if output is not None:
                self.announcer.announce_output(run.pk, *output.take_pending())
            recorded = await despite_cancel(self.recorder.record(run, outcome))
        finally:
            self.unrecorded.discard(run.pk)
        finished, retry, follow_ups = recorded
        if finished is None:  # ended elsewhere (replaced, cancelled, marked interrupted)
            ended = await self.db(Run.objects.filter(pk=run.pk).first)
            if ended is not None:
                self.hooks.finished(ended, final=True)
                self.announcer.announce(ended)
            return
        self.hooks.finished(finished, final=retry is None)
        self.announcer.announce(finished)
        if finished.status == RunStatus.QUEUED:
            self.queue_changed()  # deferred by a rate limit: the sleep is recomputed for it
        if retry is not None:
            self.announcer.announce(retry)
            self.queue_changed()  # the sleep is recomputed: the retry starts at its time
        if follow_ups:
            for follow in follow_ups:
                if follow.status == RunStatus.SKIPPED:  # ended at once, as a claim's skip
                    self.hooks.finished(follow, final=True)
                self.announcer.announce(follow)
            self.queue_changed()  # queued follow-ups start now
            if self.kind == "worker":
                # A worker's own loop claims nothing: tell the schedulers (a lost hint
                # costs one poll interval; enqueued follow-ups are already on the pool).
                await self.db(wake_schedulers)


async def _wait_for(clock: Clock, instant: datetime) -> None:
    early = (instant - clock.now()).total_seconds()
    if early > 0:
        await clock.wait(early, asyncio.Event())


def _may_have_queued(run: Run, held: bool) -> bool:
    """Whether claiming this slot's run may have queued one for a pass to start: the
    run itself (waiting for a worker, not held), the later slots of a catch-up, or
    the follow-ups of a run that failed at claim time."""
    if run.dispatch != Dispatch.INLINE:
        return False  # an enqueued run is a django.tasks worker's, not a pass's
    if run.status == RunStatus.QUEUED:
        return not held
    catch_up_all = run.schedule is not None and run.schedule.misfire == "all"
    return run.status == RunStatus.FAILED or (run.reason == RunReason.CATCH_UP and catch_up_all)


def _priority(run: Run) -> int:
    return run.schedule.priority if run.schedule is not None else 0
