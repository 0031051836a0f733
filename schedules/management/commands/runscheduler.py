"""`manage.py runscheduler [--serve [ADDR:PORT]] [--once]`."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from channels.routing import get_default_application
from django.apps import apps
from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application
from django.core.management.base import BaseCommand, CommandError

from schedules.admission import AdmissionLimit
from schedules.conf import setting, setting_problems
from schedules.management.cli import OneLineParser
from schedules.routing import asgi_application
from schedules.scheduler import process

DEFAULT_ADDRESS = "127.0.0.1:8000"


def _address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"'{value}' is not ADDR:PORT, e.g. 127.0.0.1:8000")
    return host.strip("[]") or "127.0.0.1", int(port)


def served_application() -> Any:
    """The project's ASGI_APPLICATION; without one, Django's app with the live pages' socket.

    With DEBUG and staticfiles installed, static files are served too, as by runserver.
    At most SILLO_SERVE_REQUESTS requests are in Django at once (schedules.admission):
    the scheduler shares this process.
    """
    if getattr(settings, "ASGI_APPLICATION", None):
        application = get_default_application()
    else:
        application = asgi_application(get_asgi_application())
    if settings.DEBUG and apps.is_installed("django.contrib.staticfiles"):
        application = ASGIStaticFilesHandler(application)
    return AdmissionLimit(application, int(setting("SILLO_SERVE_REQUESTS")))


class Command(BaseCommand):
    help = (
        "Run the scheduler: claim due slots, run tasks, record every run. "
        "--serve also serves the web app from the same process."
    )
    requires_system_checks = []  # task problems are reported, they must not stop scheduling

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: object) -> OneLineParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = OneLineParser
        return parser

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--serve",
            nargs="?",
            const=DEFAULT_ADDRESS,
            type=_address,
            metavar="ADDR:PORT",
            help=f"also serve ASGI_APPLICATION with daphne (default {DEFAULT_ADDRESS})",
        )
        parser.add_argument("--once", action="store_true", help="run one pass and exit")

    def handle(self, *args: object, serve: tuple[str, int] | None, once: bool, **opts) -> None:
        if serve and once:
            raise CommandError("--serve and --once do not go together", returncode=2)
        problems = setting_problems()
        if problems:
            raise CommandError("; ".join(problems), returncode=2)
        if once:
            started = asyncio.run(process.run_once())
            self.stdout.write(f"one pass: {started} run(s) started and finished")
        elif serve:
            process.serve_and_schedule(*serve, application=served_application())
        else:
            asyncio.run(process.run_scheduler())
        process.leave_task_threads()
