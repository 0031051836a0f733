"""Logging filters of the project's settings (LOGGING)."""

from __future__ import annotations

import logging


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
