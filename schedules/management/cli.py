"""Argument parsing for operator commands: bad input is one line and exit 2."""

from __future__ import annotations

import getpass
import sys
from typing import NoReturn

from django.core.management.base import CommandError, CommandParser


class OneLineParser(CommandParser):
    """A parser whose usage errors are one line on stderr, never a traceback."""

    def error(self, message: str) -> NoReturn:
        if self.called_from_command_line:
            sys.stderr.write(f"{self.prog}: error: {message}\n")
            sys.exit(2)
        raise CommandError(f"Error: {message}", returncode=2)


def os_user() -> str:
    """Who runs the command, as audit events and cancelled runs record it."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no passwd entry (containers)
        return "cli"
