"""The suite's own harness (tests/conftest.py): a hung test is stopped with its evidence,
in pytest's own process and in a pytest-xdist worker (make test runs two)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, child_environment

HUNG = """
import time

import pytest


@pytest.mark.timeout(3)
def test_hangs():
    print("printed before the hang")
    time.sleep(120)
"""


@pytest.mark.parametrize("workers", ["0", "1"])
def test_a_hung_test_is_stopped_with_its_stack_and_output(tmp_path: Path, workers: str) -> None:
    """A worker's stdout is /dev/null: the stacks were lost with it until the harness
    sent them to stderr."""
    hung = tmp_path / "test_hung.py"
    hung.write_text(HUNG)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "-n", workers, "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(hung)],
        cwd=ROOT, env=child_environment(), capture_output=True, text=True, timeout=100,
    )  # fmt: skip
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "Timeout" in out and "time.sleep(120)" in out  # the hung test's stack
    assert "printed before the hang" in out  # and what it had printed
