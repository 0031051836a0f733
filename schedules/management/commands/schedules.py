"""`manage.py schedules ...`: the operators' command line.

Every action calls the same service functions as the dashboard. Bad input is
one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError
from django.utils import timezone

from schedules import chain_reads, chains, services
from schedules.management import run_verbs, schedule_writes
from schedules.management.cli import OneLineParser, os_user
from schedules.models import FINISHED, Run, Schedule, SchedulerInstance, ScheduleStatus
from schedules.presenters import run_data, schedule_data
from schedules.registry import registry
from schedules.scheduler import process
from schedules.selectors import LIST_FLAGS, scheduler_stats
from schedules.timing import (
    InvalidTrigger,
    Trigger,
    get_zone,
    instant_from_text,
    own_zone,
    preview_times,
)
from schedules.timing.base import MAX_PREVIEW
from schedules.validation import InvalidKwargs, json_text, kwargs_from_text, parse_trigger


class Command(BaseCommand):
    help = (
        "Inspect and steer schedules: list, show, preview, pause, resume, cancel, reactivate, "
        "run, runs, cancel-run, drop-queued, stats, create, edit, delete, reset."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: object) -> OneLineParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # Django builds a plain CommandParser; ours differs only in error().
        parser.__class__ = OneLineParser
        return parser

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(
            dest="action", required=True, metavar="ACTION", parser_class=OneLineParser
        )
        cli = getattr(parser, "called_from_command_line", False)

        def action(name: str, help: str) -> argparse.ArgumentParser:
            return actions.add_parser(name, help=help, called_from_command_line=cli)

        listing = action("list", "schedules, with flags")
        listing.add_argument("--status", choices=ScheduleStatus.values)
        listing.add_argument("--flag", choices=LIST_FLAGS)
        listing.add_argument("--json", action="store_true")

        show = action("show", "one schedule in full")
        show.add_argument("code")
        show.add_argument("--json", action="store_true")

        for name, text in (
            ("pause", "pause a schedule (queued retries wait)"),
            ("resume", "resume a paused schedule from now"),
            ("cancel", "cancel a schedule (drops its queued runs)"),
            ("reactivate", "make a completed or cancelled schedule active again"),
        ):
            change = action(name, text)
            change.add_argument("code")
            change.add_argument("--json", action="store_true")

        run = action("run", "queue a manual run now")
        run.add_argument("code")
        run.add_argument("--wait", action="store_true", help="wait for the outcome")
        run.add_argument("--inline", action="store_true", help="run it in this process")
        run.add_argument("--timeout", type=float, default=600, help="seconds to --wait")
        run.add_argument(
            "--only", action="store_true", help="this one only: do not queue its follow-ups"
        )
        run.add_argument("--kwargs", help="a JSON object merged over the schedule's, for this run")
        run.add_argument("--json", action="store_true")

        cancel_run = action("cancel-run", "stop a queued or running run")
        cancel_run.add_argument("run_id", type=int, metavar="RUN_ID")
        cancel_run.add_argument("--json", action="store_true")

        drop = action("drop-queued", "cancel every queued run of a schedule")
        drop.add_argument("code")
        drop.add_argument("--json", action="store_true")

        stats = action("stats", "scheduler and queue stats, and the backlog state")
        stats.add_argument("--json", action="store_true")

        preview = action("preview", "human text and next fire times of an expression or spec")
        preview.add_argument("expression", nargs="?", help="a cron expression, e.g. '0 9 * * 1-5'")
        preview.add_argument("--spec", help="a JSON trigger spec instead of an expression")
        preview.add_argument("--tz", help="IANA zone of the expression and of the output")
        preview.add_argument("-n", type=int, default=10, help="how many fire times (default 10)")
        preview.add_argument("--after", help="ISO-8601 start (default: now); local to --tz")
        preview.add_argument("--json", action="store_true", help="a JSON array of ISO-8601 times")

        schedule_writes.add_arguments(action)
        run_verbs.add_arguments(action)

    def handle(self, *args: object, **options: object) -> None:
        action = options["action"]
        write = schedule_writes.HANDLERS.get(action) or run_verbs.HANDLERS.get(action)
        try:
            if write is not None:
                write(self, **options)
            else:
                getattr(self, f"handle_{str(action).replace('-', '_')}")(**options)
        except (
            InvalidTrigger,
            InvalidKwargs,
            services.InvalidTransition,
            services.RunRefused,
            services.CancelRefused,
        ) as exc:
            raise CommandError(str(exc), returncode=2) from None
        except chains.InvalidChain as exc:
            text = "; ".join(
                f"--{name.replace('_', '-')}: {problem}" for name, problem in exc.problems.items()
            )
            raise CommandError(text, returncode=2) from None
        except ValidationError as exc:
            problems = exc.message_dict.items() if hasattr(exc, "error_dict") else []
            text = "; ".join(f"{field}: {' '.join(m)}" for field, m in problems)
            raise CommandError(text or " ".join(exc.messages), returncode=2) from None
        except DatabaseError as exc:
            first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise CommandError(
                f"database error: {first_line} (is the database migrated and reachable?)",
                returncode=1,
            ) from None

    def emit(self, data: object) -> None:
        self.stdout.write(json_text(data, indent=None))

    # ---------------------------------------------------------------- actions

    def handle_list(self, *, status: str | None, flag: str | None, json: bool, **_) -> None:
        schedules = Schedule.objects.all()
        if status:
            schedules = schedules.filter(status=status)
        if flag:
            schedules = schedules.with_flag(flag, registry)
        rows = [schedule_data(s) for s in schedules]
        if json:
            self.emit(rows)
            return
        # Columns as wide as their longest value: a long code or `interrupted` must not
        # run into the next column.
        cells = [
            [row["code"], row["status"], f"next {row['next_run_at'] or '-'}",
             row["last_outcome"] or "-"]
            for row in rows
        ]  # fmt: skip
        widths = [max(len(cell[i]) for cell in cells) for i in range(4)] if cells else []
        for row, cell in zip(rows, cells, strict=True):
            marks = " ".join(f"[{f.upper()}]" for f in row["flags"])
            columns = "  ".join(text.ljust(width) for text, width in zip(cell, widths, strict=True))
            self.stdout.write(f"{columns}  {row['description']} {marks}".rstrip())
        if not rows:
            self.stdout.write("no schedules")

    def handle_show(self, *, code: str, json: bool, **_) -> None:
        schedule = _schedule(code)
        data = schedule_data(schedule)
        data["next_fire_times"] = [
            at.isoformat() for at, _ in schedule.preview_times(10, after=timezone.now())
        ]
        links = chain_reads.schedule_links(schedule)
        data["follow_ups"] = {
            "then": chains.stored_codes(schedule.then),
            "catch": chains.stored_codes(schedule.catch),
            "result_as": schedule.result_as,
            "upstream": [{"code": n.code, "on": n.kind} for n in links["upstream"]],
        }
        if json:
            self.emit(data)
            return
        follow = data.pop("follow_ups")
        for key, value in data.items():
            self.stdout.write(f"{key:18} {value}")
        self.stdout.write(f"{'then':18} {', '.join(follow['then']) or '-'}")
        self.stdout.write(f"{'catch':18} {', '.join(follow['catch']) or '-'}")
        if follow["result_as"]:
            self.stdout.write(f"{'result_as':18} {follow['result_as']}")
        upstream = ", ".join(f"{u['code']} ({u['on']})" for u in follow["upstream"])
        self.stdout.write(f"{'runs after':18} {upstream or '-'}")

    def handle_pause(self, *, code: str, json: bool, **_) -> None:
        self._changed(services.schedule_pause(schedule=_schedule(code), by=os_user()), json)

    def handle_resume(self, *, code: str, json: bool, **_) -> None:
        self._changed(services.schedule_resume(schedule=_schedule(code), by=os_user()), json)

    def handle_reactivate(self, *, code: str, json: bool, **_) -> None:
        self._changed(services.schedule_reactivate(schedule=_schedule(code), by=os_user()), json)

    def handle_cancel(self, *, code: str, json: bool, **_) -> None:
        self._changed(services.schedule_cancel(schedule=_schedule(code), by=os_user()), json)

    def _changed(self, schedule: Schedule, json: bool) -> None:
        if json:
            self.emit(schedule_data(schedule))
        else:
            self.stdout.write(f"{schedule.code} is {schedule.status}")

    def handle_run(
        self,
        *,
        code: str,
        wait: bool,
        inline: bool,
        timeout: float,
        json: bool,
        only: bool,
        **options,
    ) -> None:
        given = options.get("kwargs")
        kwargs = kwargs_from_text(given) if given is not None else None
        run = services.schedule_run_now(
            schedule=_schedule(code), by=os_user(), kwargs=kwargs, follow_ups=not only,
            reserve=process.INLINE_RESERVE if inline else 0.0,
        )  # fmt: skip
        if inline:
            asyncio.run(process.run_inline(run.pk))
            run.refresh_from_db()
        elif wait:
            if not SchedulerInstance.objects.alive().exists():
                raise CommandError(
                    f"run #{run.pk} is queued, but no scheduler is running to pick it up; "
                    "start one (manage.py runscheduler) or use --inline",
                    returncode=1,
                )
            run = self._follow(run, timeout, json)
        if json:
            self.emit(run_data(run))
        else:
            self.stdout.write(run_verbs.run_line(run))
        failed = f"run #{run.pk} ended {run.status}"
        if run.status not in FINISHED or run.status == "succeeded":
            failed = ""
        if inline:  # its run timed out with a thread still on it: not waited for either
            process.leave_task_threads(
                code=1 if failed else 0, last_words=f"CommandError: {failed}" if failed else ""
            )
        if failed:
            raise CommandError(failed, returncode=1)

    def handle_stats(self, *, json: bool, **_) -> None:
        data = scheduler_stats(now=timezone.now())
        if json:
            self.emit(data)
            return
        jobs, runs, queue = data["jobs"], data["runs"], data["queue"]
        self.stdout.write(
            f"jobs      {jobs['total']} (active {jobs['active']}, paused {jobs['paused']}, "
            f"completed {jobs['completed']}, cancelled {jobs['cancelled']})"
        )
        self.stdout.write(
            f"runs      {runs['total']}, errors {runs['errors']}, running {runs['running']}"
        )
        uptime = data["uptime_seconds"]
        self.stdout.write(
            f"schedulers {data['schedulers']} alive"
            + (f", up {uptime} s" if uptime is not None else "")
        )
        self.stdout.write(
            f"queue     {queue['queued']} queued, {queue['due']} due, oldest due "
            f"{queue['oldest_due_age_seconds']:g} s, a slot late "
            f"{queue['oldest_slot_late_seconds']:g} s: {queue['backlog']}"
        )

    def handle_cancel_run(self, *, run_id: int, json: bool, **_) -> None:
        run = Run.objects.filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"no run #{run_id}", returncode=2)
        run = services.run_cancel(run=run, by=os_user())
        if json:
            self.emit(run_data(run))
        else:
            self.stdout.write(f"run #{run.pk} cancelled")

    def handle_drop_queued(self, *, code: str, json: bool, **_) -> None:
        dropped = services.schedule_drop_queued(schedule=_schedule(code), by=os_user())
        if json:
            self.emit({"code": code, "dropped": dropped})
        else:
            self.stdout.write(f"{code}: {dropped} queued run(s) dropped")

    def _follow(self, run: Run, timeout: float, json: bool) -> Run:
        """Wait for the run and each retry that follows it; the last one is the outcome."""
        deadline = time.monotonic() + timeout
        while True:
            run = _wait_for(run, deadline)
            retry = _retry_of(run)
            if retry is None:
                return run
            if not json:
                self.stdout.write(run_verbs.run_line(run) + f"  (attempt {run.attempt}; retrying)")
            run = retry

    def handle_preview(
        self,
        *,
        expression: str | None,
        spec: str | None,
        tz: str | None,
        n: int,
        after: str | None,
        json: bool,
        **_,
    ) -> None:
        if not 1 <= n <= MAX_PREVIEW:
            raise CommandError(f"-n: must be a whole number from 1 to {MAX_PREVIEW}", returncode=2)
        trigger = _trigger(expression, spec, tz)
        zone = get_zone(tz) if tz else own_zone(trigger, get_zone("UTC"))
        start = instant_from_text(after, zone.key) if after else timezone.now()
        # InvalidTrigger (a bad count, a search over budget, a time no zone can show)
        # is one line with exit 2, from handle().
        times = [at for at, _ in preview_times(trigger, count=n, after=start, zone=zone)]
        if json:
            self.emit([t.isoformat() for t in times])
            return
        self.stdout.write(trigger.describe())
        if not times:
            self.stdout.write("  (no fire times after the start)")
        for i, t in enumerate(times, 1):
            self.stdout.write(f"{i:>4}  {t:%a %Y-%m-%d %H:%M:%S %z}  {zone.key}")


def _schedule(code: str) -> Schedule:
    try:
        return Schedule.objects.get(code=code)
    except Schedule.DoesNotExist:
        raise CommandError(f"no schedule with code '{code}'", returncode=2) from None


def _wait_for(run: Run, deadline: float) -> Run:
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in FINISHED:
            return run
        time.sleep(0.2)
    raise CommandError(f"run #{run.pk} still {run.status}; stopped waiting", returncode=1)


def _retry_of(run: Run) -> Run | None:
    """The attempt queued after `run`: written in the same transaction as its outcome."""
    return Run.objects.filter(parent=run, reason="retry").first()


def _trigger(expression: str | None, spec: str | None, tz: str | None) -> Trigger:
    if (expression is None) == (spec is None):
        raise CommandError(
            "give either a cron expression or --spec, not both or neither", returncode=2
        )
    # Through the validation gate, with the same limits as the dashboard.
    if spec is not None:
        return parse_trigger(spec)
    return parse_trigger({"kind": "cron", "expression": expression, "tz": tz or "UTC"})
