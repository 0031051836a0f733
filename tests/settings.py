"""Test settings: the product's settings plus an app of test tasks."""

import os
import urllib.parse

from django.core.exceptions import ImproperlyConfigured

from sillo_dash.settings import *  # noqa: F403
from sillo_dash.settings import CHANNEL_LAYERS, INSTALLED_APPS, REDIS_URL

INSTALLED_APPS = [*INSTALLED_APPS, "tests.taskapp"]
# The browser tests add tests.dupapp, which declares a duplicate task name.
INSTALLED_APPS += [app for app in os.environ.get("SILLO_EXTRA_APPS", "").split(",") if app]

# End-to-end tests shorten the scheduler's clocks through the environment.
for _name in (
    "SILLO_STALE_AFTER", "SILLO_HEARTBEAT_INTERVAL", "SILLO_RESYNC_INTERVAL",
    "SILLO_ALERT_CHECK_INTERVAL", "SILLO_NOTIFY_POLL", "SILLO_NOTIFY_RETRY_DELAY",
    "SILLO_NOTIFY_GROUP_INTERVAL",
):  # fmt: skip
    if os.environ.get(_name):
        globals()[_name] = float(os.environ[_name])
for _name in ("SILLO_MIN_WORKERS", "SILLO_MAX_WORKERS", "SILLO_WORKER_BACKLOG"):
    if os.environ.get(_name):
        globals()[_name] = int(os.environ[_name])
SILLO_SHUTDOWN_GRACE = float(os.environ.get("SILLO_SHUTDOWN_GRACE", "3"))

# `make test` runs the suite in pytest-xdist workers (gw0, gw1, ...) that share one Redis
# server: each gets a database of its own, or one worker's live-page events (the group
# names are the same in every worker) would reach another's consumers. Set in the
# environment as well, for the processes the tests start.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if REDIS_URL and _worker.startswith("gw"):
    _database = 1 + int(_worker[2:])
    if _database > 15:  # a Redis server has 16 databases, and 0 is the profile's own
        raise ImproperlyConfigured("the production pass runs at most 15 workers (TEST_WORKERS)")
    REDIS_URL = urllib.parse.urlsplit(REDIS_URL)._replace(path=f"/{_database}").geturl()
    os.environ["REDIS_URL"] = REDIS_URL
    CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0]["address"] = REDIS_URL

# A file-backed test database: the scheduler's own thread, task threads and
# live servers each open connections, which in-memory SQLite cannot share
# without table locks.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    import tempfile

    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.gettempdir(), f"sillo-test-{os.getpid()}.sqlite3")
    }

# A second django.tasks backend, for Django tasks whose runs go to their own backend
# and queue (DummyBackend records what is enqueued; its results are read in tests).
TASKS = {
    **TASKS,  # noqa: F405
    # The database backend with a second queue, for a Django task declared on it.
    "default": {**TASKS["default"], "QUEUES": ["default", "nightly"]},  # noqa: F405
    "pool": {"BACKEND": "django.tasks.backends.dummy.DummyBackend", "QUEUES": ["reports"]},
    # Runs at enqueue and cannot defer: declaring a scheduled task on it is reported.
    "now": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"},
}
