"""A task module that fails to import, for the failed-import checks."""

import schedules
from tests.brokenapp import missing_module  # noqa: F401


@schedules.task("broken.never")
def never() -> None: ...
