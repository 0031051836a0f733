"""Run every benchmark in bench/ one after the other, then write docs/benchmarks.md.

Each benchmark runs in its own process and writes its figures to
bench/results/<name>.json; a benchmark that fails is reported as failed and
the others still run. `--quick` shortens every benchmark's phases (issue 18
asks for five minutes in all on 2 cores). A complete run records its duration
in bench/results/durations.json, beside the last one of the other mode.

    python bench/run.py [--quick] [--only NAME,...] [--report-only]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from common import RESULTS  # noqa: E402
from provenance import revision  # noqa: E402
from report import ASSETS, write_report  # noqa: E402

BENCHMARKS = [
    "next_fire",
    "scheduler",
    "isolation",
    "scheduler_postgres",
    "takeover",
    "restart",
    "ceiling",
    "big_burst",
    "million",
    "run_log",
    "dashboard",
    "live_log",
    "hostile_input",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter phases, fewer repetitions")
    parser.add_argument("--only", help="comma-separated benchmark names")
    parser.add_argument("--report-only", action="store_true", help="rewrite the report only")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else BENCHMARKS
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    RESULTS.mkdir(parents=True, exist_ok=True)
    runs_file = RESULTS / "runs.json"
    runs = json.loads(runs_file.read_text()) if runs_file.exists() else {}
    if not args.report_only:
        for name in names:
            print(f"\n== {name}", flush=True)
            began = time.monotonic()
            command = [
                sys.executable,
                str(BENCH / f"{name}.py"),
                "--json",
                str(RESULTS / f"{name}.json"),
            ]
            if args.quick:
                command.append("--quick")
            (RESULTS / f"{name}.json").unlink(missing_ok=True)
            done = subprocess.run(command)
            runs[name] = {
                "seconds": round(time.monotonic() - began, 1),
                "ok": done.returncode == 0,
                "quick": args.quick,
                "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            }
            runs_file.write_text(json.dumps(runs, indent=1))
    total = sum(runs[name]["seconds"] for name in names if name in runs)
    if not args.report_only and names == BENCHMARKS:
        record_duration("quick" if args.quick else "full", total, runs)
    target = write_report(RESULTS, runs)
    print(f"\nwrote {target} ({total:.0f} s of benchmarks)")
    return 0 if all(runs.get(name, {}).get("ok") for name in names) else 1


def record_duration(mode: str, seconds: float, runs: dict) -> None:
    """Keep how long the last complete quick and full runs took, and at which commit:
    the report shows both, whichever of them made the rest of it (issue 18 item 10)."""
    path = RESULTS / "durations.json"
    # bench/results is not committed: on a new machine the other mode's last run is the
    # one the committed report states.
    known = path if path.exists() else ASSETS / "durations.json"
    durations = json.loads(known.read_text()) if known.exists() else {}
    durations[mode] = {
        **revision(),
        "seconds": round(seconds, 1),
        "ok": all(run.get("ok") for run in runs.values()),
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    path.write_text(json.dumps(durations, indent=1))


if __name__ == "__main__":
    sys.exit(main())
