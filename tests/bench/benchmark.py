"""How long stage playbooks take per node count on bench containers: a benchmark, not a test.

    python3 tests/bench/benchmark.py [--nodes 1,4,8] [--playbook playbooks/os_baseline.yml]

For each node count it starts that many Debian 12 node containers, runs the
playbook twice (first converge, then the no-change run an operator repeats
most) and prints wall time, time per node, and the task count per node. Run
it from the repository root with the project's virtual environment on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "bench" / "bench.py"
GROUP = "benchmark"


def start_nodes(count: int, inventory: Path) -> None:
    specs = [{"name": f"bench{i:02d}", "image": "debian12"} for i in range(1, count + 1)]
    subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "nodes",
            "up",
            "--prefix",
            GROUP,
            json.dumps(specs),
            "--inventory",
            str(inventory),
            "--groups",
            "rack_benchmark,bench_container",
        ],
        capture_output=True,
        text=True,
        check=True,
    )


def timed_run(playbook: str, inv: Path) -> tuple[float, int, str]:
    env = {**os.environ, "ANSIBLE_FORCE_COLOR": "0"}
    start = time.monotonic()
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(inv), playbook], cwd=ROOT, capture_output=True, text=True, env=env, check=False
    )
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"{playbook} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    tasks = max(
        (int(ok) + int(skipped) for ok, skipped in re.findall(r"ok=(\d+).*?skipped=(\d+)", proc.stdout)), default=0
    )
    changed = sorted({int(c) for c in re.findall(r"changed=(\d+)", proc.stdout)})
    return elapsed, tasks, f"changed per node {changed}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", default="1,4,8", help="comma-separated node counts")
    parser.add_argument("--playbook", default="playbooks/os_baseline.yml")
    args = parser.parse_args()
    rows = []
    for count in [int(n) for n in args.nodes.split(",")]:
        subprocess.run([sys.executable, str(BENCH), "nodes", "down", GROUP], check=True)
        with tempfile.TemporaryDirectory() as tmp:
            inv = Path(tmp) / "hosts.json"
            start_nodes(count, inv)
            # The hardware profiles live beside the shipped inventories.
            (Path(tmp) / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
            for label in ("first run", "second run"):
                elapsed, tasks, changed = timed_run(args.playbook, inv)
                rows.append((count, label, elapsed, elapsed / count, tasks, changed))
                print(
                    f"{count:>3} nodes  {label:<10}  {elapsed:7.1f} s  {elapsed / count:6.2f} s/node  "
                    f"{tasks} tasks/node  {changed}",
                    flush=True,
                )
    subprocess.run([sys.executable, str(BENCH), "nodes", "down", GROUP], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
