"""Settings for benchmarks: the product's, plus the app of benchmark tasks (for workers)."""

import os

from sillo_dash.settings import *  # noqa: F403
from sillo_dash.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.benchapp"]

# The pool starts whole, so the steady phases measure a warm pool rather than its growth
# (a worker is a fork of the fork server; the benchmark's own main module is imported
# again in each new worker, which manage.py's is not worth).
SILLO_MIN_WORKERS = 8

# The takeover benchmark's quick run shortens the heartbeat timing (and says so).
for _name in ("SILLO_STALE_AFTER", "SILLO_HEARTBEAT_INTERVAL"):
    if os.environ.get(_name):
        globals()[_name] = float(os.environ[_name])
