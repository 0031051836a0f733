"""Declares a name that tests.taskapp declares too: a duplicate, for the browser tests."""

import schedules


@schedules.task("test.twin")
def twin_here() -> None: ...
