"""How long the hardware parsers take: a benchmark, not a test.

    python3 tests/bench/benchmark_parsers.py [--lines 100000] [--runs 5]

gpu_facts' parser over an 8-GPU nvidia-smi -q -x (with its findings), goal
<= 20 ms, best of --runs x 20: the derived 8x H100 document of
tests/fixtures/nvidia_smi (only the fields gpu_facts reads), and a document
of full size made here from the real A100 capture by repeating its GPU
element eight times (what an 8-GPU node prints, element for element).

xid_scan's parser over a 100,000-line kernel log, goal <= 1 s. It builds
two logs in a temporary directory (kept out of git) by repeating the
real captures of tests/fixtures/xid (sources in tests/fixtures/SOURCES.md),
so the input is derived from real logs, not invented:

- mixed: every capture in turn, clean ones included (about one line in five
  holds an event: far denser than a real node's log);
- xid-dense: only the capture with Xid 13, 31 and 109 (six events in ten lines).

For each it reads the file and runs xid.scan, best of --runs, and prints the
line count, the events found and the seconds taken against the goal (1 s).

--hostile: every parser of tests/unit/parsers.py on its adversarial inputs of
--size characters (default 1 MiB; parsers.adversarial: captures repeated, long
runs of blanks and digits inside their lines, the inputs that made parsers
super-linear), goal <= 0.5 s each; prints the slowest input of each parser.
Run it from the repository root with the project's virtual environment.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpuops.bringup.plugins.module_utils import nvidia_smi, xid  # noqa: E402

LOGS = ROOT / "tests" / "fixtures" / "xid"
GOAL_SECONDS = 1.0
SMI = ROOT / "tests" / "fixtures" / "nvidia_smi"
GPU_GOAL_SECONDS = 0.020
HOSTILE_GOAL_SECONDS = 0.5


def eight_gpu_documents() -> dict[str, str]:
    a100 = (SMI / "a100-sxm4-80gb-mig-535.xml").read_text()
    start, end = a100.index("<gpu "), a100.index("</gpu>") + len("</gpu>")
    return {
        "8x H100, derived": (SMI / "h100-sxm-x8-565.derived.xml").read_text(),
        "8x A100 GPU element": a100[:start] + a100[start:end] * 8 + a100[end:],
    }


def measure_gpus(text: str, runs: int) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _run in range(runs * 20):
        start = time.perf_counter()
        query = nvidia_smi.parse_query_xml(text)
        nvidia_smi.findings(query, expected_count=8)
        best = min(best, time.perf_counter() - start)
        count = len(query["devices"])
    return best, count


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


def hostile(size: int) -> int:
    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    from parsers import PARSERS, adversarial

    missed = 0
    tried = 0
    print(f"every parser, adversarial inputs of {size} characters, goal <= {HOSTILE_GOAL_SECONDS} s each:")
    for entry in PARSERS:
        worst, label = 0.0, ""
        for name, data in adversarial(entry, size):
            tried += 1
            start = time.perf_counter()
            with contextlib.suppress(*entry.errors):
                entry.parse(data)
            took = time.perf_counter() - start
            if took > worst:
                worst, label = took, name
        missed += worst > HOSTILE_GOAL_SECONDS
        print(f"{entry.name:42} {worst:6.3f} s  {'met' if worst <= HOSTILE_GOAL_SECONDS else 'MISSED'}  ({label[:60]})")
    print(f"{tried} inputs, {len(PARSERS)} parsers, {missed} over the goal")
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hostile", action="store_true")
    parser.add_argument("--size", type=int, default=1024 * 1024)
    options = parser.parse_args()
    if options.hostile:
        return hostile(options.size)
    inputs = {
        "mixed": sorted(p for p in LOGS.glob("*.log") if p.stat().st_size),
        "xid-dense": [LOGS / "dmesg-ctime-xid13-31-109.log"],
    }
    print(f"python {sys.version.split()[0]}, best of {options.runs} runs")
    missed = False
    print(f"nvidia-smi -q -x, goal <= {GPU_GOAL_SECONDS * 1000:.0f} ms:")
    for name, text in eight_gpu_documents().items():
        seconds, count = measure_gpus(text, options.runs)
        missed |= seconds > GPU_GOAL_SECONDS
        print(
            f"{name:20} {count} GPUs {len(text) / 1e3:5.0f} kB  {seconds * 1000:.2f} ms  "
            f"{'met' if seconds <= GPU_GOAL_SECONDS else 'MISSED'}"
        )
    print(f"kernel log, goal <= {GOAL_SECONDS:.1f} s:")
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
