"""Logging filters and formatters of the project's settings (LOGGING)."""

from __future__ import annotations

import logging

from schedules.storable import storable_text


class PrintableFormatter(logging.Formatter):
    """Lines without NUL characters or lone surrogates, which a task can log (its records
    reach this handler too): a NUL made a log file binary to grep. Replaced with
    U+FFFD, as the run's stored output has them."""

    def format(self, record: logging.LogRecord) -> str:
        return storable_text(super().format(record))


class ClientErrorsWithoutTraceback(logging.Filter):
    """A refused request (a 4xx: a Viewer's forbidden click, a bad upload) keeps its
    one line, without the traceback of the exception that refused it: at 3 a.m. a
    traceback in the log reads as a crash. Server errors (5xx) keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if record.name == "django.request" and status is not None and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
