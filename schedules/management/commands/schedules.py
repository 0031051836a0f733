"""`manage.py schedules ...`: the operators' command line."""

from __future__ import annotations

import argparse
import json

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from schedules.management.cli import OneLineParser
from schedules.timing import Cron, InvalidTrigger, Trigger, instant_from_text, trigger_from_spec
from schedules.timing.zones import get_zone


class Command(BaseCommand):
    help = "Inspect and steer schedules. `schedules preview EXPR` shows the next fire times."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: object) -> OneLineParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        # Django builds a plain CommandParser; ours differs only in error().
        parser.__class__ = OneLineParser
        return parser

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(
            dest="action", required=True, metavar="ACTION", parser_class=OneLineParser
        )
        preview = actions.add_parser(
            "preview",
            help="human text and next fire times of a cron expression or a trigger spec",
            called_from_command_line=getattr(parser, "called_from_command_line", False),
        )
        preview.add_argument("expression", nargs="?", help="a cron expression, e.g. '0 9 * * 1-5'")
        preview.add_argument("--spec", help="a JSON trigger spec instead of an expression")
        preview.add_argument("--tz", help="IANA zone of the expression and of the output")
        preview.add_argument("-n", type=int, default=10, help="how many fire times (default 10)")
        preview.add_argument(
            "--after", help="ISO-8601 start (default: now); local to --tz if no offset"
        )
        preview.add_argument(
            "--json", action="store_true", help="print a JSON array of ISO-8601 times"
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            getattr(self, f"handle_{options['action']}")(**options)
        except InvalidTrigger as exc:
            raise CommandError(str(exc), returncode=2) from None

    def handle_preview(
        self,
        *,
        expression: str | None,
        spec: str | None,
        tz: str | None,
        n: int,
        after: str | None,
        json: bool,
        **_: object,
    ) -> None:
        trigger = _trigger(expression, spec, tz)
        zone = get_zone(tz) if tz else getattr(trigger, "zone", None) or get_zone("UTC")
        start = instant_from_text(after, zone.key) if after else timezone.now()
        times = [t.astimezone(zone) for t in trigger.preview(n, start)]
        if json:
            self.stdout.write(_json([t.isoformat() for t in times]))
            return
        self.stdout.write(trigger.describe())
        if not times:
            self.stdout.write("  (no fire times after the start)")
        for i, t in enumerate(times, 1):
            self.stdout.write(f"{i:>4}  {t:%a %Y-%m-%d %H:%M:%S %z}  {zone.key}")


def _trigger(expression: str | None, spec: str | None, tz: str | None) -> Trigger:
    if (expression is None) == (spec is None):
        raise CommandError(
            "give either a cron expression or --spec, not both or neither", returncode=2
        )
    if spec is not None:
        return trigger_from_spec(spec)
    return Cron(expression, tz or "UTC")


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
