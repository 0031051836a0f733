"""`manage.py schedules create|edit|delete|reset`: the write side of the operators' CLI.

The same input checks (schedules.inputs) and services as the dashboard and the
API. Every problem is one line naming the option at fault, exit status 2.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from schedules import chains, inputs, services
from schedules.choices import Dispatch, Misfire, Overlap, priority_value
from schedules.management.cli import os_user
from schedules.models import Schedule
from schedules.presenters import schedule_data
from schedules.registry import OPTION_NAMES, TaskOptions, registry
from schedules.validation import InvalidKwargs, kwargs_from_text, parse_trigger, trigger_limits

# Option name -> (flag, argparse type, help).
OPTION_FLAGS: dict[str, tuple[str, Callable, str]] = {
    "timeout": ("--timeout", float, "seconds before the run is stopped (0: never)"),
    "max_attempts": ("--max-attempts", int, "attempts including retries"),
    "retry_delay": ("--retry-delay", float, "seconds before the first retry"),
    "max_instances": ("--max-instances", int, "runs of this schedule at once"),
    "overlap": ("--overlap", str, f"when max-instances is reached: {', '.join(Overlap.values)}"),
    "misfire": ("--misfire", str, f"missed slots: {', '.join(Misfire.values)}"),
    "misfire_grace": ("--misfire-grace", float, "seconds late before a slot is missed"),
    "priority": (
        "--priority",
        str,
        "higher runs first: an integer, or low, normal, high, critical",
    ),
    "dispatch": ("--dispatch", str, f"where bodies run: {', '.join(Dispatch.values)}"),
    "then": ("--then", str, "follow-up schedule codes on success, comma-separated ('' clears)"),
    "catch": ("--catch", str, "follow-up codes on final failure, comma-separated ('' clears)"),
    "result_as": ("--result-as", str, "pass the outcome to follow-ups as this kwarg ('' stops)"),
}


def add_arguments(action: Callable[[str, str], argparse.ArgumentParser]) -> None:
    create = action("create", "create a schedule")
    create.add_argument("code", help="a unique slug")
    create.add_argument("--task", required=True, help="the task name")
    _trigger_arguments(create)
    _field_arguments(create)

    edit = action("edit", "change a schedule (only the options given)")
    edit.add_argument("code")
    edit.add_argument("--task", help="the task name")
    _trigger_arguments(edit)
    _field_arguments(edit)
    edit.add_argument(
        "--default-timeout", action="store_true", help="use SILLO_DEFAULT_TIMEOUT again"
    )

    delete = action("delete", "delete a schedule (its runs stay in the log)")
    delete.add_argument("code")
    delete.add_argument("--json", action="store_true")

    reset = action("reset", "put the code's trigger and options back on a code-default record")
    reset.add_argument("code")
    reset.add_argument("--json", action="store_true")


def _trigger_arguments(parser: argparse.ArgumentParser) -> None:
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--cron", help="a cron expression, e.g. '0 9 * * 1-5'")
    when.add_argument("--every", type=float, help="an interval in seconds")
    when.add_argument("--at", help="one time, ISO-8601 (local to --tz without an offset)")
    when.add_argument("--spec", help="a JSON trigger spec (docs/timing.md)")
    parser.add_argument("--tz", help="IANA zone of --cron/--at, and the zone times show in")


def _field_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kwargs", help='a JSON object, e.g. \'{"region": "eu"}\'')
    for _name, (flag, kind, text) in OPTION_FLAGS.items():
        parser.add_argument(flag, type=kind, help=text)
    parser.add_argument("--json", action="store_true")


def handle_create(cmd: BaseCommand, *, code: str, task: str, **options: Any) -> None:
    if Schedule.objects.filter(code=code).exists():
        raise CommandError(f"a schedule with code '{code}' already exists", returncode=2)
    trigger = _trigger(options)
    if trigger is None:
        raise CommandError(
            "give the schedule a trigger: --cron, --every, --at or --spec", returncode=2
        )
    declaration = registry.get(task)
    values = asdict(declaration.options if declaration else TaskOptions())
    values.update(_given_options(options))
    kwargs = _kwargs(options["kwargs"]) if options["kwargs"] is not None else {}
    tz = options["tz"] or ""
    _check(task_name=task, kwargs=kwargs, tz=tz, options=values)
    schedule = services.schedule_create(
        code=code, task_name=task, trigger=trigger, kwargs=kwargs, tz=tz, by=os_user(), **values
    )
    _report(cmd, schedule, f"created {schedule.code}", options["json"])


def handle_edit(cmd: BaseCommand, *, code: str, task: str | None, **options: Any) -> None:
    schedule = _schedule(code)
    values = {name: getattr(schedule, name) for name in OPTION_NAMES}
    values.update(_given_options(options))
    if options["default_timeout"]:
        values["timeout"] = None
    fields = {
        "task_name": task if task is not None else schedule.task_name,
        "kwargs": _kwargs(options["kwargs"]) if options["kwargs"] is not None else schedule.kwargs,
        "tz": options["tz"] if options["tz"] is not None else schedule.tz,
    }
    _check(**fields, options=values, current_task=schedule.task_name)
    trigger = _trigger(options) or schedule.trigger
    schedule = services.schedule_update(
        schedule=schedule, trigger=trigger, by=os_user(), **fields, **values
    )
    _report(cmd, schedule, f"saved {schedule.code}", options["json"])


def handle_delete(cmd: BaseCommand, *, code: str, json: bool, **_: Any) -> None:
    schedule = _schedule(code)
    services.schedule_delete(schedule=schedule, by=os_user())
    if json:
        cmd.emit({"code": code, "deleted": True})
    else:
        cmd.stdout.write(f"deleted {code}")


def handle_reset(cmd: BaseCommand, *, code: str, json: bool, **_: Any) -> None:
    schedule = services.schedule_reset_to_default(schedule=_schedule(code), by=os_user())
    _report(cmd, schedule, f"reset {code} to the code default of {schedule.task_name}", json)


HANDLERS = {
    "create": handle_create,
    "edit": handle_edit,
    "delete": handle_delete,
    "reset": handle_reset,
}


def _schedule(code: str) -> Schedule:
    schedule = Schedule.objects.filter(code=code).first()
    if schedule is None:
        raise CommandError(f"no schedule with code '{code}'", returncode=2)
    return schedule


def _trigger(options: dict[str, Any]) -> dict | None:
    """The trigger spec the options give (checked: InvalidTrigger), or None if none."""
    tz = options["tz"] or "UTC"
    if options["spec"] is not None:
        spec = _spec(options["spec"])
    elif options["cron"] is not None:
        spec = {"kind": "cron", "expression": options["cron"], "tz": tz}
    elif options["every"] is not None:
        spec = {"kind": "interval", "every": options["every"]}
    elif options["at"] is not None:
        spec = {"kind": "date", "at": options["at"], "tz": tz}
    else:
        return None
    if inputs.json_problem(spec):
        raise CommandError(f"trigger: {inputs.json_problem(spec)}", returncode=2)
    # The validation gate, as the dashboard and the API: SILLO_TRIGGER_LIMITS, and
    # anything odd the engine raises is refused as InvalidTrigger, not a traceback.
    return parse_trigger(spec).to_spec()


def _spec(text: str) -> object:
    """--spec's JSON value, read as the validation gate reads a spec given as text.

    Parsed here, not by parse_trigger from the text, so that json_problem sees the
    value first: NUL and NaN are refused with its reason, as for --every and --at.
    The bound and the errors caught are the gate's own (timing.trigger_from_spec).
    """
    limit = trigger_limits().max_spec_bytes
    if len(text) > limit:
        raise CommandError(f"--spec: longer than {limit} characters", returncode=2)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"--spec: not valid JSON: {exc.msg}", returncode=2) from None
    except (ValueError, RecursionError) as exc:  # 4,300+ digit integers, deep nesting
        raise CommandError(f"--spec: not valid JSON: {exc}", returncode=2) from None


def _kwargs(text: str) -> dict:
    """--kwargs as `schedules run --kwargs` reads it: bounded, and any JSON that cannot be
    read (huge integers, deep nesting) is one line. The gate names the field "kwargs";
    here it is the option, as _check names it."""
    try:
        return kwargs_from_text(text)
    except InvalidKwargs as exc:
        raise CommandError(f"--kwargs: {str(exc).removeprefix('kwargs: ')}", returncode=2) from None


def _given_options(options: dict[str, Any]) -> dict[str, Any]:
    given = {name: options[name] for name in OPTION_FLAGS if options.get(name) is not None}
    for name in ("then", "catch"):
        if name in given:
            given[name] = chains.codes_of(given[name])
    if "priority" in given:
        try:
            given["priority"] = priority_value(given["priority"])
        except ValueError as exc:
            raise CommandError(f"--priority: {exc}", returncode=2) from None
    return given


def _check(**fields: Any) -> None:
    problems = inputs.schedule_problems(**fields)
    if problems:
        flags = {name: flag for name, (flag, _, _) in OPTION_FLAGS.items()}
        names = {"task_name": "--task", "kwargs": "--kwargs", "tz": "--tz", **flags}
        text = "; ".join(
            f"{names.get(name, name)}: {problem}" for name, problem in problems.items()
        )
        raise CommandError(text, returncode=2)


def _report(cmd: BaseCommand, schedule: Schedule, line: str, as_json: bool) -> None:
    if as_json:
        cmd.emit(schedule_data(schedule))
    else:
        cmd.stdout.write(line)
