"""`manage.py schedules rerun|runs|export|import`: the run log and the deployment as files.

`rerun` queues a past run again; `runs` streams the run log (text, JSON, JSON
Lines or CSV) with the runs page's filters; `export` and `import` write and
read the schedules as JSON (schedules/transfer.py). Problems are one line,
exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from schedules import services, transfer
from schedules.choices import RunReason
from schedules.management.cli import os_user
from schedules.models import Run
from schedules.presenters import run_data
from schedules.run_filters import WINDOWS, RunFilters
from schedules.run_log import LINES, export_rows
from schedules.validation import json_text, kwargs_from_text

FORMATS = ("text", "json", "jsonl", "csv")
MAX_IMPORT_BYTES = 50 * 1024 * 1024


def add_arguments(action: Callable[[str, str], argparse.ArgumentParser]) -> None:
    rerun = action("rerun", "queue a past run again, with its kwargs or --kwargs")
    rerun.add_argument("run_id", type=int, metavar="RUN_ID")
    rerun.add_argument("--kwargs", help="a JSON object instead of the run's kwargs")
    rerun.add_argument("--json", action="store_true")

    runs = action("runs", "the run log, newest first, with the runs page's filters")
    runs.add_argument("code", nargs="?", help="one schedule's runs (its code)")
    runs.add_argument("--status", action="append", help="a status or 'errors' (repeatable)")
    runs.add_argument("--task", help="runs of this task")
    runs.add_argument("--reason", choices=RunReason.values)
    runs.add_argument("--window", choices=list(WINDOWS), help="the last 15m, 1h, 24h, 7d, 30d")
    runs.add_argument("--since", help="ISO-8601: queued at or after (UTC without an offset)")
    runs.add_argument("--until", help="ISO-8601: queued before")
    runs.add_argument("--search", help="text in the error")
    runs.add_argument("--limit", type=int, help="at most this many (text/json: 20)")
    runs.add_argument("--format", choices=FORMATS, default="text", dest="fmt")
    runs.add_argument("--json", action="store_true", help="the same as --format json")

    export = action("export", "every schedule as a JSON document (codes as keys)")
    export.add_argument("--output", "-o", help="a file instead of standard output")

    load = action("import", "create and update schedules from an export; shows the changes")
    load.add_argument("file", help="an export's JSON file, or - for standard input")
    load.add_argument("--dry-run", action="store_true", help="show the changes, change nothing")


def handle_rerun(command: BaseCommand, *, run_id: int, kwargs: str | None, json: bool, **_) -> None:
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise CommandError(f"no run #{run_id}", returncode=2)
    given = kwargs_from_text(kwargs) if kwargs is not None else None
    new = services.run_rerun(run=run, by=os_user(), kwargs=given)
    if json:
        command.stdout.write(json_text(run_data(new), indent=None))
    else:
        command.stdout.write(f"run #{new.pk} queued (a rerun of run #{run.pk})")


def handle_runs(command: BaseCommand, *, code: str | None, fmt: str, json: bool, **options) -> None:
    fmt = "json" if json else fmt
    limit = options.get("limit")
    if limit is not None and not 1 <= limit <= 10_000_000:
        raise CommandError("--limit must be from 1 to 10000000", returncode=2)
    params = {
        "status": options.get("status") or [], "task": options.get("task"),
        "schedule": code, "reason": options.get("reason"), "window": options.get("window"),
        "since": options.get("since"), "until": options.get("until"), "q": options.get("search"),
    }  # fmt: skip
    filters = RunFilters.from_params(params, now=timezone.now())
    if filters.problems:
        raise CommandError("; ".join(filters.problems), returncode=2)
    runs = filters.ordered()
    if fmt in LINES:
        # Streamed: every matching run unless --limit, a chunk in memory at a time.
        for text in LINES[fmt](export_rows(runs[:limit] if limit else runs)):
            command.stdout.write(text, ending="")
        command.stdout.flush()
        return
    rows = list(runs[: limit or 20])
    if fmt == "json":
        command.stdout.write(json_text([run_data(r) for r in rows], indent=None))
        return
    for run in rows:
        command.stdout.write(run_line(run))
    if not rows:
        command.stdout.write("no runs")


def run_line(run: Run) -> str:
    duration = f"{run.duration_ms}ms" if run.duration_ms is not None else "-"
    text = (
        f"#{run.pk:<6} {run.schedule_code:30} {run.status:11} {run.reason:9} "
        f"attempt {run.attempt} {duration:>9}"
    )
    if run.reason == "chained" and run.parent_id is not None:
        text += f"  after #{run.parent_id}"
    if run.error:
        text += f"  {run.error.splitlines()[0][:120]}"
    return text


def handle_export(command: BaseCommand, *, output: str | None, **_) -> None:
    document = transfer.export_schedules()
    text = json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True)
    if output:
        try:
            Path(output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror}", returncode=2) from None
        command.stdout.write(f"{len(document['schedules'])} schedule(s) written to {output}")
    else:
        command.stdout.write(text)


def handle_import(command: BaseCommand, *, file: str, dry_run: bool, **_) -> None:
    document = _read_document(command, file)
    try:
        plan = transfer.plan_import(document)
    except transfer.ImportRefused as exc:
        raise CommandError(f"import refused, nothing changed: {exc}", returncode=2) from None
    for line in plan.lines():
        command.stdout.write(line)
    if dry_run:
        command.stdout.write("dry run: nothing changed")
        return
    transfer.apply_import(plan, by=os_user(), via="cli")
    command.stdout.write("imported")


def _read_document(command: BaseCommand, file: str) -> Any:
    try:
        if file == "-":
            text = sys.stdin.read(MAX_IMPORT_BYTES + 1)
        else:
            with open(file, encoding="utf-8") as handle:
                text = handle.read(MAX_IMPORT_BYTES + 1)
    except OSError as exc:
        raise CommandError(f"cannot read {file}: {exc.strerror}", returncode=2) from None
    except UnicodeDecodeError:
        raise CommandError(f"{file} is not UTF-8 text", returncode=2) from None
    if len(text) > MAX_IMPORT_BYTES:
        raise CommandError(f"{file} is over {MAX_IMPORT_BYTES // 2**20} MB", returncode=2)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, 4,300+ digit integers, nesting
        raise CommandError(f"{file} is not JSON: {exc}", returncode=2) from None


HANDLERS: dict[str, Callable[..., Any]] = {
    "rerun": handle_rerun,
    "runs": handle_runs,
    "export": handle_export,
    "import": handle_import,
}
