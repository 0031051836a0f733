"""Settings for benchmarks: the product's, plus the app of benchmark tasks (for workers)."""

from sillo_dash.settings import *  # noqa: F403
from sillo_dash.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "bench.benchapp"]
