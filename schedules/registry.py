"""Task declarations: `@schedules.task(...)`, discovery, duplicates and failures.

A task is a function declared in code as schedulable. Declarations are
collected here at import time; `autodiscover()` imports every installed app's
`tasks.py` and records the modules that fail, so the other tasks keep working.

A Django task (`@task` of `django.tasks`) is declared as it is, by stacking
`@schedules.task(...)` on it or by `schedules.schedule(the_task, ...)`: its
runs are enqueued on the task's own backend, queue and priority
(`dispatch="enqueue"`, see `scheduler/dispatch.py`) and recorded like any run.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from django.tasks import Task

from .alerts.schema import InvalidRules, clean_rules
from .choices import Dispatch, Misfire, Overlap, RateMode, priority_value
from .timing import Cron, Interval, InvalidTrigger, Trigger

logger = logging.getLogger(__name__)

ISOLATIONS = ("process", "inline")


@dataclass(frozen=True)
class TaskOptions:
    """How a task runs; a schedule record starts from these and may override them."""

    timeout: float | None = None
    max_attempts: int = 1
    retry_delay: float = 10.0
    max_instances: int = 1
    overlap: str = "skip"
    misfire: str = "skip"
    misfire_grace: float = 60.0
    priority: int = 0
    rate_limit: int | None = None
    rate_period: float = 60.0
    rate_mode: str = "skip"
    dispatch: str = "inline"
    # Follow-ups (docs/chains.md): schedule codes run after a success (then) and
    # after a final failure (catch); `result_as` names the kwarg they receive the
    # outcome in. Lists, as the record stores them (a code default compares equal).
    then: list[str] = field(default_factory=list)
    catch: list[str] = field(default_factory=list)
    result_as: str = ""


# The option names, in declaration order: a schedule record has a field of each.
OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(TaskOptions))


@dataclass
class TaskDeclaration:
    """One function declared with `@schedules.task`."""

    name: str
    func: Callable[..., Any]
    options: TaskOptions
    default_trigger: Trigger | None = None
    middleware: tuple[Callable, ...] = ()
    # "process": runs in a worker process (stoppable, isolated); "inline": in the scheduler.
    isolation: str = "process"
    problems: list[str] = field(default_factory=list)
    # The django.tasks Task declared, whose backend, queue and priority its runs use.
    django_task: Task | None = None
    # Alert rules (docs/alerts.md): read live, not copied into the record, so that
    # every schedule of the task follows the code unless it overrides a rule.
    alert: dict[str, Any] = field(default_factory=dict)

    @property
    def module(self) -> str:
        return self.func.__module__

    @property
    def qualname(self) -> str:
        return f"{self.func.__module__}.{self.func.__qualname__}"

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)

    @property
    def worker_problem(self) -> str:
        """Why a worker process would not find this task, or "" (inline tasks need none).

        Workers declare tasks by importing modules, so a function defined in
        __main__ or inside another function never exists there.
        """
        if self.isolation != "process":
            return ""
        if self.func.__module__ == "__main__":
            return (
                f"{self.qualname} is defined in __main__, which worker processes do not "
                "import: declare it in an app's tasks.py, or use isolation='inline'"
            )
        if "<locals>" in self.func.__qualname__:
            return (
                f"{self.qualname} is defined inside a function, so worker processes cannot "
                "import it: declare it at module level, or use isolation='inline'"
            )
        return ""


@dataclass
class Registry:
    """Every declaration seen, by task name, and the task modules that failed."""

    declarations: dict[str, list[TaskDeclaration]] = field(default_factory=dict)
    failed_imports: dict[str, str] = field(default_factory=dict)

    def add(self, declaration: TaskDeclaration) -> None:
        existing = self.declarations.setdefault(declaration.name, [])
        # Re-importing the same module (autoreload, tests) is not a duplicate.
        existing[:] = [d for d in existing if d.qualname != declaration.qualname]
        existing.append(declaration)

    def get(self, name: str) -> TaskDeclaration | None:
        """The one declaration of `name`; None if undeclared or a duplicate."""
        found = self.declarations.get(name, [])
        return found[0] if len(found) == 1 else None

    def runnable_names(self) -> set[str]:
        return {name for name, found in self.declarations.items() if len(found) == 1}

    def duplicate_names(self) -> set[str]:
        return {name for name, found in self.declarations.items() if len(found) > 1}

    def all(self) -> list[TaskDeclaration]:
        return [d for found in self.declarations.values() for d in found]

    def status_of(self, task_name: str) -> str:
        """'ok', 'duplicate' or 'orphan' for a schedule's task name."""
        found = self.declarations.get(task_name, [])
        if len(found) > 1:
            return "duplicate"
        return "ok" if found else "orphan"

    def refusal(self, task_name: str) -> str:
        """Why runs of `task_name` cannot execute, or "" if they can.

        The one wording for "can this task run?": run-now refusals, skipped
        runs, flags and the list's disabled buttons all say this.
        """
        found = self.declarations.get(task_name, [])
        if not found:
            return f"task '{task_name}' is not declared (orphan)"
        if len(found) > 1:
            places = ", ".join(d.qualname for d in found)
            return f"task '{task_name}' is declared more than once (duplicate), in {places}"
        return ""


registry = Registry()


def task(
    name: str | None = None,
    *,
    every: float | None = None,
    cron: str | None = None,
    tz: str | None = None,
    middleware: Sequence[Callable] = (),
    isolation: str = "process",
    alert: dict[str, Any] | None = None,
    **options: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a function, or a `django.tasks` Task, as a schedulable task called `name`.

    `every` (seconds) or `cron` (with `tz`) give the task a code default: a
    schedule record created when missing. `options` are the fields of
    `TaskOptions` (timeout, max_attempts, retry_delay, ...). `alert` gives the
    task's default alert rules (docs/alerts.md). `name` defaults to the
    function's dotted path. The function (or Task) is returned unchanged.

    On a Django task (`@schedules.task(...)` above `@task`), runs default to
    `dispatch="enqueue"` on the task's own backend, queue and priority.

    `isolation="process"` (the default) runs each run in a worker process, so
    a timeout or a cancel stops it for real and nothing it does can take the
    scheduler down. `isolation="inline"` runs it in the scheduler process:
    async bodies on the scheduler's event loop, sync bodies in a thread. Inline
    runs cannot be stopped (a timed-out sync body keeps running, and keeps its
    schedule's instance busy, until it returns) and a blocking call in an async
    body stalls the scheduler; use it only for trusted, light async tasks.
    """

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        django_task = func if isinstance(func, Task) else None
        target = django_task.func if django_task is not None else func
        given = dict(options)
        if django_task is not None:
            given.setdefault("dispatch", Dispatch.ENQUEUE)
            given.setdefault("priority", django_task.priority)
        task_name = name if name is not None else f"{target.__module__}.{target.__qualname__}"
        unknown = sorted(set(given) - set(OPTION_NAMES))
        known = {key: value for key, value in given.items() if key in OPTION_NAMES}
        for key in ("then", "catch"):
            if key in known:
                # One code or several; the record's JSON list (chains.codes_problem checks them).
                value = known[key]
                known[key] = [value] if isinstance(value, str) else list(value or [])
        priority_problem = ""
        if "priority" in known:
            try:
                known["priority"] = priority_value(known["priority"])
            except ValueError as exc:
                priority_problem = str(exc)
                known["priority"] = 0
        declaration = TaskDeclaration(
            name=task_name,
            func=target,
            options=TaskOptions(**known),
            middleware=tuple(middleware),
            isolation=isolation,
            django_task=django_task,
        )
        if isolation not in ISOLATIONS:
            declaration.problems.append(f"isolation must be one of {', '.join(ISOLATIONS)}")
        if priority_problem:
            declaration.problems.append(priority_problem)
        if unknown:
            declaration.problems.append(
                f"unknown option(s) {', '.join(unknown)}; known: {', '.join(OPTION_NAMES)}"
            )
        declaration.problems.extend(_option_problems(declaration.options))
        if django_task is not None:
            declaration.problems.extend(_django_task_problems(django_task, declaration.options))
        if alert:
            try:
                declaration.alert = clean_rules(alert)
            except InvalidRules as exc:
                declaration.problems.append(f"invalid alert rules: {exc}")
        if not isinstance(task_name, str) or not task_name.strip():
            declaration.problems.append("task name must be a non-empty string")
        if every is not None and cron is not None:
            declaration.problems.append("declare either every= or cron=, not both")
        elif every is not None or cron is not None:
            try:
                declaration.default_trigger = (
                    Interval(every, seed=task_name)
                    if every is not None
                    else Cron(cron, tz or "UTC")
                )
            except InvalidTrigger as exc:
                declaration.problems.append(f"invalid default schedule: {exc}")
        elif tz is not None:
            declaration.problems.append("tz= only applies together with cron=")
        registry.add(declaration)
        return func

    return register


def schedule(
    existing: Callable[..., Any],
    *,
    name: str | None = None,
    every: float | None = None,
    cron: str | None = None,
    tz: str | None = None,
    middleware: Sequence[Callable] = (),
    isolation: str = "process",
    **options: Any,
) -> Callable[..., Any]:
    """Declare an existing function or Django task, as it is, e.g. in an app's tasks.py:

        schedules.schedule(send_digest, cron="0 7 * * *", tz="Europe/Berlin")

    The same as stacking `@schedules.task(name, ...)` on it; returns it unchanged.
    """
    declare = task(
        name, every=every, cron=cron, tz=tz, middleware=middleware, isolation=isolation, **options
    )
    return declare(existing)


def _django_task_problems(django_task: Task, options: TaskOptions) -> list[str]:
    """What keeps the scheduler from handing this Django task's runs to its backend."""
    problems = []
    if django_task.takes_context:
        problems.append(
            "takes_context=True: a scheduled run calls the function with its kwargs only"
        )
    if options.dispatch == Dispatch.ENQUEUE:
        try:
            backend = django_task.get_backend()
        except Exception as exc:  # a misconfigured TASKS setting: said here, not at run time
            problems.append(f"its backend '{django_task.backend}' cannot be loaded: {exc}")
        else:
            if not backend.supports_defer:
                problems.append(
                    f"its backend '{django_task.backend}' cannot defer tasks (run_after), which "
                    "retries and catch-up runs need; use one that can, or dispatch='inline'"
                )
    return problems


def _option_problems(options: TaskOptions) -> list[str]:
    problems = []
    if options.timeout is not None and not options.timeout >= 0:
        problems.append("timeout must be seconds, 0 for none, or None for the default")
    if not isinstance(options.max_attempts, int) or options.max_attempts < 1:
        problems.append("max_attempts must be at least 1")
    if not options.retry_delay >= 0:
        problems.append("retry_delay must not be negative")
    if not isinstance(options.max_instances, int) or options.max_instances < 1:
        problems.append("max_instances must be at least 1")
    if options.rate_limit is not None and (
        not isinstance(options.rate_limit, int) or options.rate_limit < 1
    ):
        problems.append("rate_limit must be a whole number of runs, at least 1, or None")
    if not options.rate_period > 0:
        problems.append("rate_period must be positive seconds")
    choice_sets = (("overlap", Overlap), ("misfire", Misfire), ("dispatch", Dispatch),
                   ("rate_mode", RateMode))  # fmt: skip
    for option, choices in choice_sets:
        if getattr(options, option) not in choices.values:
            problems.append(f"{option} must be one of {', '.join(choices.values)}")
    if not options.misfire_grace >= 0:
        problems.append("misfire_grace must not be negative")
    for option in ("then", "catch"):
        bad = [code for code in getattr(options, option) if not _is_code(code)]
        if bad:
            problems.append(f"{option} must name schedule codes, got {bad[0]!r}")
    if options.result_as and not str(options.result_as).isidentifier():
        problems.append(f"result_as must be a keyword argument name, got {options.result_as!r}")
    return problems


def _is_code(value: object) -> bool:
    return isinstance(value, str) and bool(CODE_PATTERN.fullmatch(value))


# A schedule's code (as models.CODE_VALIDATOR says; models imports this module's choices).
CODE_PATTERN = re.compile(r"[A-Za-z0-9_.:-]{1,200}")


def autodiscover(app_modules: Sequence[str]) -> None:
    """Import `<app>.tasks` for each app; record the ones that fail to import."""
    for app in app_modules:
        module_name = f"{app}.tasks"
        try:
            importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # the app has no tasks.py
            _record_failure(module_name)
        except Exception:
            _record_failure(module_name)
        else:
            registry.failed_imports.pop(module_name, None)


def _record_failure(module_name: str) -> None:
    summary = traceback.format_exc(limit=-1).strip().splitlines()[-1]
    registry.failed_imports[module_name] = summary
    logger.error("task module %s failed to import: %s", module_name, summary)
