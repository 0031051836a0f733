"""Takeover: one of three schedulers on PostgreSQL is killed (SIGKILL) mid-load.

Three `runscheduler` processes share a throwaway durable PostgreSQL (as in
scheduler_postgres.py): 600 schedules every 6 s (100 runs/s, slots spread
evenly, each body noting when it started) and a few long runs in flight. The
scheduler with the most long runs executing is killed; the others go on. Two
cases: the killed scheduler on the same node as its peers (they see its pid
gone), and on another node (simulated by rewriting the node its record names,
so the peers can only wait for its heartbeat to go stale).

Measured from the task bodies' notes and the run table:

- the killed scheduler's runs: how long until its peers record them
  `interrupted`, and whether any of their bodies went on executing after the
  kill (their worker must end with it);
- the steady slots around the kill: lateness over time (the timeline plot),
  slots that never ran, and which of those the killed scheduler had claimed
  (they end `interrupted`: a claimed slot is never run twice), slots whose body
  ran twice.

Not a test: nothing here asserts.

    python bench/takeover.py [--quick] [--json FILE]
"""

from __future__ import annotations

import signal
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import benchmark_options, percentile, write_results  # noqa: E402
from scheduler_postgres import (  # noqa: E402
    clear_tables,
    prepared_server,
    read_executions,
    schedule_row,
    start_schedulers,
)

SCHEDULERS = 3
STEADY, EVERY = 600, 6.0
LONG = 6  # long runs due at once; at most 6 of a scheduler's 8 workers busy with them
LATE_MS = 100.0  # a steady slot later than this is late
# Heartbeat timing: the defaults in the full run; shortened in a quick one (stated).
FULL = {"lead": 3.0, "warmup": 5.0, "tail": 3.0, "heartbeat": 5.0, "stale_after": 30.0}
QUICK = {"lead": 3.0, "warmup": 3.0, "tail": 1.5, "heartbeat": 0.5, "stale_after": 2.0}
NODES = ("same", "other")


def long_row(code: str, at: datetime, seconds: float):
    row = schedule_row(code, at, 86400.0)
    row.task_name, row.kwargs = "bench.hold_worker", {"code": code, "seconds": seconds}
    return row


def observe(shape: dict, node: str) -> float:
    """Seconds to watch after the kill: until the peers must have recovered, and a tail."""
    recovery = shape["heartbeat"] + (shape["stale_after"] if node == "other" else 0.0)
    return recovery + shape["tail"]


def run_case(url: str, env: dict, shape: dict, node: str, folder: Path) -> dict:
    first = datetime.now(UTC) + timedelta(seconds=shape["lead"])
    kill_at = first + timedelta(seconds=shape["warmup"])
    after = observe(shape, node)
    # Long enough to be executing at the kill; ends before the watch does if not stopped.
    hold = (kill_at - first).total_seconds() + after / 2
    rows = [schedule_row(f"s{i}", first + timedelta(seconds=EVERY * i / STEADY), EVERY)
            for i in range(STEADY)]  # fmt: skip
    rows += [long_row(f"L{i}", first + timedelta(seconds=0.5), hold) for i in range(LONG)]
    clear_tables(url)
    from schedules.models import Schedule

    Schedule.objects.bulk_create(rows, batch_size=1000)
    executions = folder / f"executions-{node}.txt"
    logs = [folder / f"takeover-{node}-{i}.log" for i in range(SCHEDULERS)]
    timing = {"SILLO_HEARTBEAT_INTERVAL": str(shape["heartbeat"]),
              "SILLO_STALE_AFTER": str(shape["stale_after"])}  # fmt: skip
    processes = start_schedulers({**env, **timing}, executions, logs)
    time.sleep(max(0.0, (kill_at - datetime.now(UTC)).total_seconds()))
    with psycopg.connect(url, autocommit=True) as db:
        victim = busiest(db, processes)
        if node == "other":
            db.execute("UPDATE schedules_schedulerinstance SET node = 'another node' "
                       "WHERE id = %s", [victim["instance"]])  # fmt: skip
        victim["running"] = db.execute(
            "SELECT count(*) FROM schedules_run WHERE scheduler = %s AND status = 'running'",
            [victim["instance"]],
        ).fetchone()[0]
        killed = time.time()
        processes[victim["index"]].send_signal(signal.SIGKILL)
        time.sleep(after)
        outcome = db.execute(
            "SELECT schedule_code, status, slot, finished_at FROM schedules_run "
            "WHERE scheduler = %s",
            [victim["instance"]],
        ).fetchall()
        # Slots the overlap rule skipped, recorded by any scheduler: a slot due while the
        # killed scheduler's run of it was still in flight (until it was interrupted).
        skipped = db.execute(
            "SELECT schedule_code, slot FROM schedules_run WHERE status = 'skipped' "
            "AND schedule_code LIKE 's%%'"
        ).fetchall()
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(60)
    # The schedulers' first second is their start-up, not the steady state the kill breaks.
    before = min(EVERY, shape["warmup"] - 1.0)
    return figures(
        read_executions(executions), outcome, victim, (killed, before, after), first, skipped
    )


def busiest(db, processes) -> dict:
    """The scheduler with the most long runs executing: the kill is to cost something."""
    rows = db.execute(
        "SELECT i.id, i.pid, count(r.id) FROM schedules_schedulerinstance i "
        "LEFT JOIN schedules_run r ON r.scheduler = i.id AND r.status = 'running' "
        "AND r.task_name = 'bench.hold_worker' GROUP BY i.id, i.pid ORDER BY 3 DESC, 1"
    ).fetchall()
    pids = [process.pid for process in processes]
    instance, pid, long_runs = next(row for row in rows if row[1] in pids)
    return {"instance": instance, "index": pids.index(pid), "long_running": long_runs}


def figures(executions, outcome, victim, span, first, skipped=()) -> dict:
    """The steady slots due from `before` seconds before the kill until a second before
    the watch ends (`span`: the kill's epoch time, before, after), and the killed
    scheduler's runs. A missed slot is one no task body ran for: the killed scheduler
    had claimed it, the overlap rule skipped it (`skipped`, recorded by a scheduler),
    or no scheduler claimed it."""
    killed, before, after = span
    its_long = {code for code, *_ in outcome if code.startswith("L")}
    starts: dict[tuple[str, float], list[float]] = {}
    ended_after_kill = 0
    for code, at in executions:
        if code.startswith("L"):
            ended_after_kill += (
                code.removesuffix(".end") in its_long and code.endswith(".end") and at > killed
            )
            continue
        anchor = first.timestamp() + EVERY * int(code[1:]) / STEADY
        slot = anchor + ((at - anchor) // EVERY) * EVERY
        starts.setdefault((code, round(slot, 3)), []).append(at)
    begin, end = killed - before, killed + after - 1.0  # slots due in this span must have run
    claimed_by_victim = {(code, round(slot.timestamp(), 3)): status
                         for code, status, slot, _ in outcome if code.startswith("s")}  # fmt: skip
    recorded_skips = {(code, round(slot.timestamp(), 3)) for code, slot in skipped}
    missed, victims_missed, skips_missed, timeline = 0, 0, 0, []
    for i in range(STEADY):
        code = f"s{i}"
        anchor = first.timestamp() + EVERY * i / STEADY
        slot = anchor + max(0, (begin - anchor) // EVERY + 1) * EVERY
        while slot <= end:
            ran = starts.get((code, round(slot, 3)))
            if ran:
                timeline.append((slot - killed, (min(ran) - slot) * 1000))
            else:
                missed += 1
                victims_missed += (code, round(slot, 3)) in claimed_by_victim
                skips_missed += (code, round(slot, 3)) in recorded_skips
            slot += EVERY
    timeline.sort()
    before_kill = [late for at, late in timeline if at < 0]
    after_kill = [late for at, late in timeline if at >= 0]
    late_after = [at for at, late in timeline if at >= 0 and late > LATE_MS]
    interrupted = [finished.timestamp() - killed for code, status, _, finished in outcome
                   if status == "interrupted" and finished]  # fmt: skip
    return {
        "victim": victim,
        "watched_s": after,
        "before_s": before,
        "slots": len(timeline) + missed,
        "missed": missed,
        "missed_claimed_by_killed": victims_missed,
        "missed_skipped_in_flight": skips_missed,
        "executed_twice": sum(1 for ran in starts.values() if len(ran) > 1),
        "p99_before_ms": percentile(before_kill, 0.99) if before_kill else None,
        "p99_after_ms": percentile(after_kill, 0.99) if after_kill else None,
        "max_after_ms": max(after_kill) if after_kill else None,
        "late_after": len(late_after),
        "on_time_again_s": max(late_after) if late_after else 0.0,
        "interrupted": len(interrupted),
        "interrupted_after_s": [min(interrupted), max(interrupted)] if interrupted else None,
        "left_running": sum(1 for _, status, _, _ in outcome if status == "running"),
        "bodies_after_kill": ended_after_kill,
        "timeline": [[round(at, 3), round(late, 2)] for at, late in timeline],
    }


def main() -> None:
    parser = benchmark_options(__doc__, quick="shorter heartbeat timing (stated)")
    args = parser.parse_args()
    shape = QUICK if args.quick else FULL
    folder = Path(tempfile.mkdtemp(prefix="sillo-bench-takeover-"))
    print(f"takeover: {SCHEDULERS} schedulers, {STEADY} schedules every {EVERY:g}s, "
          f"{LONG} long runs; {shape}", flush=True)  # fmt: skip
    cases = {}
    with prepared_server(folder) as (url, env, durability):
        for node in NODES:
            case = run_case(url, env, shape, node, folder)
            cases[node] = case
            print(
                f"{node} node: killed a scheduler with {case['victim']['running']} runs "
                f"running; interrupted {case['interrupted']} after "
                f"{case['interrupted_after_s']} s; bodies executing after the kill "
                f"{case['bodies_after_kill']}; steady slots missed {case['missed']} "
                f"({case['missed_claimed_by_killed']} claimed by it), executed twice "
                f"{case['executed_twice']}; p99 after the kill {case['p99_after_ms']} ms",
                flush=True,
            )
    settings = {"schedulers": SCHEDULERS, "steady": STEADY, "every": EVERY, "long": LONG,
                "late_ms": LATE_MS, "database": "PostgreSQL",
                "durability": {"PostgreSQL": {"sillo": durability}}, "shape": shape,
                "quick": args.quick}  # fmt: skip
    write_results(args.json, "takeover", settings, {"cases": cases})


if __name__ == "__main__":
    main()
