"""A run log of 10 million rows (issue 18 item 5): lateness unchanged, the cost of
retention pruning, bytes per run, `/health/` and `/metrics`, on SQLite and PostgreSQL.

10,000 interval schedules, each every 100 s (100 runs a second, slots spread
evenly). On each database, in order:

1. steady, empty log: one `manage.py runscheduler` (the product's defaults: runs
   in worker processes, the no-op worker task); lateness inside the task over
   windows after a warm-up, as bench/ceiling.py measures a step;
2. pruning, small log: 20 finished runs per schedule, retention keeping 10: the
   seconds the pruner's bounded passes (retention.prune_pass, as the scheduler's
   timer calls it) take to delete the 100,000 beyond it;
3. the log is filled to 10,000,000 finished runs, 1,000 per schedule (the
   default SILLO_RUNS_PER_SCHEDULE), as 28 hours at this rate would leave them;
   bytes per run: the database's growth (SQLite's file after a checkpoint,
   PostgreSQL's run table with its indexes and TOAST) over the rows added;
   then the log settles (`settle`): on PostgreSQL, the vacuum and analysis that
   autovacuum spreads over those 28 hours;
4. `/health/` and `/metrics` through Django's whole request handling;
5. steady again, over the full log: lateness as in 1;
6. pruning, full log: 10 more runs per schedule, retention keeping the 1,000 of
   the fill (the default): as in 2, beside 10 million rows;
7. the dashboard at issue 18's scale on this log (item 8, bench/dashboard_scale.py):
   grown to 100,000 schedules, each page for one user, then 20 users through
   `runscheduler --serve` while steady runs as in 1.

"Lateness unchanged" is read as the full log's worst-window p99 within 1.5× of
the empty log's plus 5 ms (a 2-core VM's noise between two runs minutes apart);
"pruning cost per day bounded" as the cost per pruned run beside 10 million rows
within 2× of that beside 200,000, and no pass over 1 s. Its cost per day is that
per-run cost times a day of runs at this rate.

A full run only: writing 10 million rows on each database takes minutes. A quick
run writes results that say so.

    python bench/run_log.py [--quick] [--json FILE] [--rows N]
"""

from __future__ import annotations

import functools
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    benchmark_options,
    free_port,
    percentile,
    summary,
    wait_for_port,
    write_results,
)

SCHEDULES = 10_000
EVERY = 100.0  # seconds: 10,000 schedules make 100 runs a second
ROWS = 10_000_000
KEEP = 1_000  # the default SILLO_RUNS_PER_SCHEDULE: the full log is what it keeps
SMALL_KEEP, SMALL_EXTRA, EXTRA = 10, 10, 10  # runs per schedule for the pruning phases
CHUNK = 500_000  # rows per INSERT ... SELECT (one transaction each)
SHAPE = {"warmup": 3.0, "windows": 5, "window": 4.0}
LEAD = 6.0  # seconds from writing the slots to the first: one scheduler's start
REQUESTS = 10
METRICS_TOKEN = "b" * 32
PAGES = {"/health/": {}, "/metrics": {"Authorization": f"Bearer {METRICS_TOKEN}"}}


# ---------------------------------------------------------------- the log's rows


def _constant_columns() -> dict:
    """Every run column's stored value for a finished run of the no-op task."""
    from django.db import connection

    from schedules.models import Run

    template = Run(schedule_code="", task_name="bench.noop_worker", kwargs={}, reason="scheduled",
                   status="succeeded", dispatch="inline")  # fmt: skip
    fields = [f for f in Run._meta.concrete_fields if not f.primary_key]
    return {f.column: f.get_db_prep_save(f.pre_save(template, True), connection) for f in fields}


def _moment(seconds_sql: str) -> str:
    """SQL for the stored datetime `seconds_sql` epoch seconds stand for."""
    from django.db import connection

    if connection.vendor == "sqlite":  # Django stores them as text, in this form
        return f"strftime('%%Y-%%m-%%d %%H:%%M:%%S', {seconds_sql}, 'unixepoch')"
    return f"to_timestamp({seconds_sql})"


def _series(low: int, high: int) -> str:
    from django.db import connection

    if connection.vendor == "sqlite":
        return (f"(WITH RECURSIVE seq(x) AS (SELECT {low} UNION ALL SELECT x + 1 FROM seq "
                f"WHERE x < {high - 1}) SELECT x FROM seq) AS numbers")  # fmt: skip
    return f"generate_series({low}, {high - 1}) AS numbers(x)"


def add_runs(
    per_schedule: int,
    start: float,
    *,
    schedules: int = SCHEDULES,
    first_id: int | None = None,
    code: str | None = None,
    every: float = EVERY,
) -> int:
    """`per_schedule` finished runs of each of `schedules` schedules from `first_id` (the
    log's: s0, s1, ..., or one whose code is `code`), one every `every` s from `start`
    (epoch s), written by the database itself (INSERT ... SELECT over a series): 10
    million rows built in Python and sent over took several times as long."""
    from django.db import connection, transaction

    from schedules.models import Run, Schedule

    if first_id is None:
        first_id = Schedule.objects.order_by("pk").values_list("pk", flat=True).first()
    base = _constant_columns()
    # Run x is the (x // schedules)-th of schedule x % schedules.
    # (%% is % once the parameters are bound, on either backend.)
    k, g = f"(x %% {schedules})", f"(x / {schedules})"
    at = f"({start:.0f} + {g} * {every:.0f} + {k} %% 100)"
    varying = {
        "schedule_id": f"({first_id} + {k})",
        "schedule_code": f"'{code}'" if code else f"('s' || {k})",
        "slot": _moment(at),
        "queued_at": _moment(at),
        "not_before": _moment(at),
        "started_at": _moment(at),
        "finished_at": _moment(f"({at} + 1)"),
    }
    columns = list(base)
    quote = connection.ops.quote_name
    values = [varying.get(c, "%s") for c in columns]
    params = [base[c] for c in columns if c not in varying]
    total = per_schedule * schedules
    for low in range(0, total, CHUNK):
        high = min(total, low + CHUNK)
        sql = (
            f"INSERT INTO {quote(Run._meta.db_table)} ({', '.join(map(quote, columns))}) "
            f"SELECT {', '.join(values)} FROM {_series(low, high)}"
        )
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    return total


SETTLE = "vacuum, analyse, checkpoint, sync"  # what settle() does, as the results say


def settle() -> float:
    """Seconds to bring a log written in minutes to the state its hours of growth leave.

    Rows written in minutes leave to the steady phase that follows the background work
    28 hours of growth would have spread out. On PostgreSQL, autovacuum's: in the first
    full runs its catch-up over 10 million rows (ANALYZE of the run table, then VACUUM
    ANALYZE of the schedule and tally tables) fell in one window of that phase (p99
    54 ms, 2.0-2.6 ms in the others); so the database is vacuumed and analysed. That
    vacuum rewrites every page it visits, and the kernel then wrote them back during
    the steady phase: its windows beside 368, 368, 70, 7 and 7 MB dirty or under
    writeback (steady's writeback_mb), one of them at p99 64 ms; with a checkpoint and
    a `sync` after the vacuum, 1 to 2 MB and 2.4 to 2.8 ms. So they follow it, as the
    hours would have written those pages long before. SQLite's fill is
    already on disk (database_bytes checkpoints it) and has no such background work.
    """
    from django.db import connection

    began = time.monotonic()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")  # outside a transaction: Django autocommits
            cursor.execute("CHECKPOINT")
    os.sync()
    return time.monotonic() - began


def database_bytes() -> int:
    """SQLite: the file's pages in use after a checkpoint; PostgreSQL: the run table with
    its indexes and TOAST."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":  # pages in use: freed ones are reused first
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            used = [cursor.execute(f"PRAGMA {name}").fetchone()[0]
                    for name in ("page_count", "freelist_count", "page_size")]  # fmt: skip
            return (used[0] - used[1]) * used[2]
        cursor.execute("SELECT pg_total_relation_size('schedules_run')")
        return cursor.fetchone()[0]


# ---------------------------------------------------------------- phases


def place_slots(first: float) -> None:
    """Every schedule's next slot, spread evenly over EVERY from `first`."""
    from django.db import connection

    from schedules.bulk import update_each
    from schedules.models import Schedule

    ids = Schedule.objects.order_by("pk").values_list("pk", flat=True)[:SCHEDULES]  # s0, s1, ...
    update_each(Schedule, ["next_run_at"], [
        (datetime.fromtimestamp(first + EVERY * i / SCHEDULES, UTC), pk)
        for i, pk in enumerate(ids)
    ])  # fmt: skip
    connection.close()


def steady(database, during: Callable[[int, float], dict] | None = None) -> dict:
    """One scheduler over the records: lateness inside the task per window. With
    `during`, the scheduler also serves the web app (`runscheduler --serve`), and
    `during(port, end)` loads it until the last window's end (epoch s); what it
    returns is the result's "load"."""
    from ceiling import start_schedulers, stop
    from scheduler_postgres import read_executions

    first = time.time() + LEAD
    place_slots(first)
    executions = database.folder / "executions.txt"
    executions.unlink(missing_ok=True)
    env = {**database.env, "SILLO_BENCH_EXECUTIONS": str(executions)}
    begin = first + SHAPE["warmup"]
    end = begin + SHAPE["windows"] * SHAPE["window"]
    loaded = None
    writeback = Writeback()
    if during is None:
        processes = start_schedulers(1, env, database.folder)
    else:
        port = free_port()
        processes = [serving_scheduler(env, database.folder, port)]
    try:
        if during is not None:
            wait_for_port(port, processes[0], "runscheduler --serve")
            loaded = during(port, end)
        time.sleep(max(0.0, end + 1.0 - time.time()))
    finally:
        stop(processes)
        writeback.stop()
    late = []
    for code, at in read_executions(executions):
        anchor = first + EVERY * int(code[1:]) / SCHEDULES
        slot = anchor + ((at - anchor) // EVERY) * EVERY
        late.append((slot, (at - slot) * 1000))
    windows = by_window(late, begin)
    found = {
        "runs": sum(len(w) for w in windows),
        "expected": round(SCHEDULES / EVERY * SHAPE["windows"] * SHAPE["window"]),
        "p50_ms": summary(percentile(w, 0.5) if w else None for w in windows),
        "p99_ms": summary(percentile(w, 0.99) if w else None for w in windows),
        "p99_by_window_ms": [round(percentile(w, 0.99), 1) if w else None for w in windows],
    }
    found["writeback_mb"] = [round(max(w)) if w else None
                             for w in by_window(writeback.samples, begin)]  # fmt: skip
    if loaded is not None:
        found["load"] = {**loaded, "from_window_start_s": loaded["from"] - begin}
    return found


def by_window(pairs: list[tuple[float, float]], begin: float) -> list[list[float]]:
    """The values of (epoch s, value) pairs in each measured window from `begin`."""
    windows: list[list[float]] = [[] for _ in range(SHAPE["windows"])]
    for at, value in pairs:
        index = int((at - begin) // SHAPE["window"])
        if 0 <= index < SHAPE["windows"]:
            windows[index].append(value)
    return windows


class Writeback:
    """The kernel's memory dirty or under writeback (MB), sampled through a steady phase.

    A commit's flush waits behind the data pages the kernel is writing back: a slow
    window beside hundreds of megabytes of them has its reason measured (settle)."""

    EVERY = 0.25

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(self.EVERY):
            if (kb := dirty_kb()) is not None:
                self.samples.append((time.time(), kb / 1024))

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def dirty_kb() -> int | None:
    """Dirty plus Writeback from /proc/meminfo (Linux), in kB; None elsewhere."""
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in lines)
    return sum(int(fields[name].split()[0]) for name in ("Dirty", "Writeback"))


def serving_scheduler(env: dict, logs: Path, port: int) -> subprocess.Popen:
    """`runscheduler --serve` on `port`: the scheduler and the web app in one process."""
    from ceiling import ROOT

    with (logs / "scheduler-serve.log").open("w") as log:
        return subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "runscheduler", "--serve",
             f"127.0.0.1:{port}"],
            env=env, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip


def pruning(keep: int) -> dict:
    """Bounded passes, as the scheduler's timer makes them, turn after turn over the
    schedules, until a whole turn deletes nothing (that turn's time: what pruning costs
    when there is nothing to prune). Of the turns that deleted, the seconds spent
    finding each schedule's oldest kept run (retention._oldest_kept, which reads `keep`
    index entries a schedule) are kept apart: the cost that grows with the retention
    kept, not with the log."""
    from django.db import connection

    from schedules.scheduler import retention

    cursor = retention.Cursor()
    now = datetime.now(UTC)
    passes: list[float] = []
    deleted, finding = 0, 0.0
    while True:
        turn, times = 0, []
        with timed(retention, "_oldest_kept") as spent:
            while True:
                began = time.perf_counter()
                turn += retention.prune_pass(keep=keep, max_age_days=None, now=now, cursor=cursor)
                times.append(time.perf_counter() - began)
                if cursor.after == 0:  # back at the first schedule
                    break
        if not turn:
            break
        deleted += turn
        passes += times
        finding += spent[0]
    connection.close()
    seconds = sum(passes)
    per_1000 = 1000 * 1000 / deleted if deleted else None
    return {
        "deleted": deleted,
        "seconds": seconds,
        "passes": len(passes),
        "longest_pass_s": max(passes + times),
        "idle_turn_s": sum(times),
        "ms_per_1000": seconds * per_1000 if deleted else None,
        "finding_ms_per_1000": finding * per_1000 if deleted else None,
    }


@contextmanager
def timed(module, name: str) -> Iterator[list[float]]:
    """Seconds spent in `module.name` while inside, in the list yielded (its one item)."""
    original, spent = getattr(module, name), [0.0]

    def clocked(*args, **kwargs):
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - began

    setattr(module, name, clocked)
    try:
        yield spent
    finally:
        setattr(module, name, original)


def requests() -> dict:
    """`/health/` and `/metrics` (token mode), server time and queries."""
    from django.test import Client
    from pages import measure

    # 503 is what /health/ must say while no scheduler is up; Django logs each at ERROR.
    logging.getLogger("django.request").setLevel(logging.CRITICAL)
    client = Client()
    # No scheduler is up between the phases: /health/ says so (503), after the same reads.
    found = {
        url: measure(client, url, headers, REQUESTS, statuses=(200, 503))
        for url, headers in PAGES.items()
    }
    found["/metrics"].update(metrics_split())
    return found


def metrics_split() -> dict:
    """Where a `/metrics` answer's time goes: the collector reading the records and
    building the metric families, and prometheus_client writing them out as text."""
    from prometheus_client import generate_latest

    from schedules.web.metrics import SilloCollector

    class Collected:
        def __init__(self, families: list) -> None:
            self.families = families

        def collect(self) -> list:
            return self.families

    collect, write, lines = [], [], 0
    for _ in range(REQUESTS):
        began = time.perf_counter()
        families = list(SilloCollector().collect())
        built = time.perf_counter()
        text = generate_latest(Collected(families))  # type: ignore[arg-type]
        collect.append(1000 * (built - began))
        write.append(1000 * (time.perf_counter() - built))
        lines = text.count(b"\n")
    return {"collect_ms": summary(collect), "write_ms": summary(write), "lines": lines}


def one_database(name: str, rows: int) -> dict:
    from ceiling import postgresql, sqlite

    per_schedule = rows // SCHEDULES
    with (sqlite if name == "SQLite" else postgresql)() as (database, durability):
        database.fresh()
        from schedule_records import insert_schedule_rows

        far = time.time() + 10 * 86400  # placed later, phase by phase
        insert_schedule_rows({f"s{i}": (far, EVERY) for i in range(SCHEDULES)},
                             "bench.noop_worker")  # fmt: skip
        found: dict = {"database": name, "durability": durability}
        found["steady_empty"] = steady(database)
        print(f"{name}: empty log, p99 {found['steady_empty']['p99_ms']}", flush=True)
        past = time.time() - 2 * 86400
        add_runs(SMALL_KEEP + SMALL_EXTRA, past)
        found["pruning_small"] = {"rows": _run_count(), **pruning(SMALL_KEEP)}
        print(f"{name}: pruning beside {found['pruning_small']['rows']:,} rows: "
              f"{found['pruning_small']}", flush=True)  # fmt: skip
        _clear_runs()
        before = database_bytes()
        began = time.monotonic()
        # Older than any slot to come: 28 hours at this rate, ending a day ago.
        added = add_runs(per_schedule, past - per_schedule * EVERY)
        found["fill_s"] = time.monotonic() - began
        found["rows"] = _run_count()
        found["expected_rows"] = added
        found["bytes_per_run"] = (database_bytes() - before) / added
        found["settle_s"] = settle()
        print(f"{name}: {found['rows']:,} rows in {found['fill_s']:.0f} s, "
              f"{found['bytes_per_run']:.0f} bytes a run, settled in "
              f"{found['settle_s']:.0f} s", flush=True)  # fmt: skip
        found["requests"] = requests()
        found["steady_full"] = steady(database)
        print(f"{name}: full log, p99 {found['steady_full']['p99_ms']}", flush=True)
        add_runs(EXTRA, past + 3600)
        found["pruning_full"] = {"rows": _run_count(), **pruning(per_schedule)}
        print(f"{name}: pruning beside {found['pruning_full']['rows']:,} rows: "
              f"{found['pruning_full']}", flush=True)  # fmt: skip
        found["dashboard"] = dashboard(database)
    return found


def dashboard(database) -> dict:
    """Item 8 on this log, grown to 100,000 schedules (bench/dashboard_scale.py)."""
    import dashboard_scale

    from schedules.models import Schedule

    busy = dashboard_scale.grow(add_runs)
    found = {"schedules": Schedule.objects.count(), "rows": _run_count(), "settle_s": settle()}
    found["pages"], cookie = dashboard_scale.pages(busy)
    slowest = max(found["pages"].values(), key=lambda page: page["server_ms"]["median"])
    print(f"{database.name}: {found['schedules']:,} schedules, {found['rows']:,} runs: "
          f"slowest page {slowest['server_ms']['median']:.0f} ms", flush=True)  # fmt: skip
    database.close()
    load = functools.partial(dashboard_scale.load, busy=busy, cookie=cookie)
    found["served"] = steady(database, during=load)
    print(f"{database.name}: {dashboard_scale.USERS} users on runscheduler --serve, p99 "
          f"{found['served']['p99_ms']}", flush=True)  # fmt: skip
    return found


def _run_count() -> int:
    from schedules.models import Run

    return Run.objects.count()


def _clear_runs() -> None:
    from django.db import connection

    from schedules.models import Run

    table = connection.ops.quote_name(Run._meta.db_table)
    with connection.cursor() as cursor:
        # PostgreSQL keeps a deleted row's space until a vacuum: the fill would reuse it and
        # its bytes per run read low. Emptied, the table starts from nothing.
        if connection.vendor == "postgresql":
            cursor.execute(f"TRUNCATE {table} CASCADE")
        else:
            cursor.execute(f"DELETE FROM {table}")


def main() -> None:
    parser = benchmark_options(__doc__, quick="not run: the full run measures it")
    parser.add_argument("--rows", type=int, default=ROWS, help="rows in the full log")
    parser.add_argument("--child", nargs=2, help="internal")
    args = parser.parse_args()
    if args.child:
        name, out = args.child
        Path(out).write_text(json.dumps(one_database(name, args.rows), default=str))
        return
    settings = {"rows": args.rows, "schedules": SCHEDULES, "every_s": EVERY, "keep": KEEP,
                "small_keep": SMALL_KEEP, "shape": SHAPE, "quick": args.quick,
                "settle": SETTLE}  # fmt: skip
    if args.quick:
        print("run_log: not run in a quick run (the full run measures it)", flush=True)
        write_results(args.json, "run_log", {**settings, "measured": False}, {})
        return
    databases = []
    for name in ("SQLite", "PostgreSQL"):
        out = Path(tempfile.mkdtemp(prefix="sillo-bench-log-")) / "run_log.json"
        env = {**os.environ, "SILLO_METRICS": "token", "SILLO_METRICS_TOKEN": METRICS_TOKEN,
               "DJANGO_ALLOWED_HOSTS": "testserver,127.0.0.1",
               "DJANGO_STATIC_ROOT": tempfile.mkdtemp(prefix="sillo-bench-static-")}  # fmt: skip
        command = [sys.executable, __file__, "--child", name, str(out), "--rows", str(args.rows)]
        subprocess.run(command, env=env, check=True)
        databases.append(json.loads(out.read_text()))
    write_results(args.json, "run_log", {**settings, "measured": True}, {"databases": databases})


if __name__ == "__main__":
    main()
