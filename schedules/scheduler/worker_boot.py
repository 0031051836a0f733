"""Imported once in the worker fork server: Django set up there, so each worker forks ready.

The pool starts the fork server with the scheduler's database settings in
SILLO_WORKER_DATABASES (JSON), so that workers use the same databases the
scheduler does (a test run points them elsewhere than the settings module).
Any failure here is left for each worker to report: the worker sets Django
up itself when it finds it not ready.
"""

from __future__ import annotations

import gc
import json
import logging
import os

DATABASES_ENV = "SILLO_WORKER_DATABASES"


def boot() -> None:
    try:
        # Deferred: this module is imported by the pool before it starts the fork server.
        import django
        from django.conf import settings

        databases = os.environ.get(DATABASES_ENV)
        if databases:
            settings.DATABASES = json.loads(databases)
        django.setup()
        # What Django set up lives as long as the server and every worker forked from
        # it: out of the collector's sight (see child.main).
        gc.freeze()
    except Exception:  # noqa: BLE001  the workers report it when they start
        logging.getLogger(__name__).exception("worker fork server could not set Django up")


if os.environ.get(DATABASES_ENV) is not None and __name__ != "__main__":
    boot()
