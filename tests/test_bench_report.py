"""The benchmark report's statistics and verdicts (bench/common.py, bench/report.py).

The benchmarks themselves are not tests; what turns their figures into
docs/benchmarks.md is, since a wrong percentile or verdict would make the
report lie.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from common import percentile, summary  # noqa: E402
from formatting import ratio, spread  # noqa: E402
from reading import targets_and_reading  # noqa: E402


def test_percentiles_follow_the_nearest_rank_rule() -> None:
    values = list(range(1, 101))
    assert percentile(values, 0.50) == 50
    assert percentile(values, 0.99) == 99
    assert percentile(reversed(values), 1.0) == 100
    assert percentile([7.0], 0.99) == 7.0


def test_a_summary_is_median_and_spread_of_what_was_measured() -> None:
    assert summary([3.0, None, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert summary([None, None]) is None
    assert spread(summary([1.0, 2.0, 4.0])) == "2.0 [1.0–4.0]"
    assert spread(None) == "–"


def test_ratios_are_the_peer_over_this_project() -> None:
    assert ratio(30.0, 10.0) == "3.00×"
    assert ratio(5.0, None) == "–"


def figures(p99: float, burst: float, idle: float) -> dict:
    def one(value: float) -> dict:
        return {"median": value, "min": value, "max": value, "n": 1}

    row = {
        "runs": 100, "expected": 100, "p50_ms": one(p99 / 2), "p99_ms": one(p99),
        "max_ms": one(p99), "idle_cpu_percent": one(idle),
        "burst": {"started": [1000], "all_started_s": one(burst), "runs_per_s": one(1000 / burst)},
    }  # fmt: skip
    return {"load": {10_000: {"sillo": row}}, "memory": {}}


def test_targets_met_are_said_to_be_met() -> None:
    targets, reading = targets_and_reading({"scheduler": figures(p99=12.0, burst=0.4, idle=0.1)})
    assert "**missed**" not in targets
    assert targets.count("| met |") == 3
    assert "Missed targets" not in reading


def test_a_missed_target_says_by_how_much_and_what_would_close_it() -> None:
    targets, reading = targets_and_reading({"scheduler": figures(p99=150.0, burst=1.2, idle=0.1)})
    assert "| p99 lateness under 100 ms at 10,000 schedules | 150.0 ms | **missed** |" in targets
    assert "| 1.20 s | **missed** |" in targets
    assert "missed by 0.20 s" in reading and "What would close it" in reading
    assert "Missed targets" in reading
