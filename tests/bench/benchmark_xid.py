"""How long xid_scan's parser takes over a 100,000-line kernel log: a benchmark, not a test.

    python3 tests/bench/benchmark_xid.py [--lines 100000] [--runs 5]

Builds two logs in a temporary directory (kept out of git) by repeating the
real captures of tests/fixtures/xid (sources in tests/fixtures/SOURCES.md),
so the input is derived from real logs, not invented:

- mixed: every capture in turn, clean ones included (about one line in five
  holds an event: far denser than a real node's log);
- xid-dense: only the capture with Xid 13, 31 and 109 (six events in ten lines).

For each it reads the file and runs xid.scan, best of --runs, and prints the
line count, the events found and the seconds taken against the goal (1 s).
Run it from the repository root with the project's virtual environment.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpuops.bringup.plugins.module_utils import xid  # noqa: E402

LOGS = ROOT / "tests" / "fixtures" / "xid"
GOAL_SECONDS = 1.0


def build(path: Path, sources: list[Path], lines: int) -> None:
    """Write sources one after another, again and again, until the file has `lines` lines."""
    chunks = [source.read_text().rstrip("\n").split("\n") for source in sources]
    written = []
    while len(written) < lines:
        for chunk in chunks:
            written.extend(chunk)
    path.write_text("\n".join(written[:lines]) + "\n")


def measure(path: Path, runs: int) -> tuple[float, dict]:
    best, result = float("inf"), {}
    for _run in range(runs):
        start = time.perf_counter()
        result = xid.scan(path.read_text(encoding="utf-8", errors="replace"))
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    inputs = {
        "mixed": sorted(p for p in LOGS.glob("*.log") if p.stat().st_size),
        "xid-dense": [LOGS / "dmesg-ctime-xid13-31-109.log"],
    }
    print(f"python {sys.version.split()[0]}, best of {options.runs} runs, goal <= {GOAL_SECONDS:.1f} s")
    missed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, sources in inputs.items():
            path = Path(tmp) / f"{name}.log"
            build(path, sources, options.lines)
            seconds, result = measure(path, options.runs)
            missed |= seconds > GOAL_SECONDS
            print(
                f"{name:10} {result['lines']:>7} lines {path.stat().st_size / 1e6:6.1f} MB "
                f"{result['summary']['events']:>6} events  {seconds:.3f} s  "
                f"{'met' if seconds <= GOAL_SECONDS else 'MISSED'}"
            )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
