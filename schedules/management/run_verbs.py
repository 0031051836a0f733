"""`manage.py schedules rerun|runs|export|import`: the run log and the deployment as files.

`rerun` queues a past run again; `runs` streams the run log (text, JSON, JSON
Lines or CSV) with the runs page's filters; `export` and `import` write and
read the schedules as JSON (schedules/transfer.py). Problems are one line,
exit status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from schedules import services
from schedules.management.cli import os_user
from schedules.models import Run
from schedules.presenters import run_data
from schedules.validation import json_text, kwargs_from_text


def add_arguments(action: Callable[[str, str], argparse.ArgumentParser]) -> None:
    rerun = action("rerun", "queue a past run again, with its kwargs or --kwargs")
    rerun.add_argument("run_id", type=int, metavar="RUN_ID")
    rerun.add_argument("--kwargs", help="a JSON object instead of the run's kwargs")
    rerun.add_argument("--json", action="store_true")


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


HANDLERS: dict[str, Callable[..., Any]] = {"rerun": handle_rerun}
