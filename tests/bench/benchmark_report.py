"""How long the acceptance reports take for a large run, and how heavy the HTML is: a benchmark, not a test.

    .venv/bin/python tests/bench/benchmark_report.py [--nodes 1000] [--runs 3]

Builds a results directory of --nodes nodes in a temporary directory (kept out of git) from the golden node documents
of real captures (tests/unit/plugins/module_utils/golden/acceptance: each node one of them in turn, every verdict
and failure type among them, 27 checks each), with each node's kept all_reduce_perf run and nvidia-smi -q -x (the
8x H100 captures), as the acceptance stage writes them, 40 nodes to a rack. Then, best of --runs:

- the four reports written from the directory (acceptance_report.write_reports), goal <= 10 s;
- report.html's size, goal <= 15 MB (15,000,000 bytes);
- report.html opened in Debian's headless chromium until its load event (the browser already started), goal <= 5 s.

Run it from the repository root with the project's virtual environment; prints each figure against its goal and exits
1 when one is missed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from results_fixture import GOLDEN, node_read

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance_report, acceptance_results

GOALS = {"write": 10.0, "size": 15_000_000, "open": 5.0}


def build(run_dir: Path, count: int) -> None:
    goldens = [json.loads(p.read_text()) for p in sorted(GOLDEN.glob("*.json"))]
    read = node_read()
    run = {"run_id": run_dir.name, "started_at": "2026-12-06T10:00:00Z", "finished_at": "2026-12-06T11:00:00Z",
           "operator": "bench", "collection": {"name": "gpuops.bringup", "version": "0.1.0"}, "tools": {}}  # fmt: skip
    entries = []
    for i in range(count):
        node = f"gpu-{i:04d}"
        document = {**goldens[i % len(goldens)], "node": node, "rack": f"rack_{i // 40:02d}"}
        entries.append(acceptance_results.node_entry(acceptance_results.write_node(str(run_dir), document, read)))
    acceptance_results.write_run(str(run_dir), run, entries)


def open_seconds(html: Path, runs: int) -> float:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"))
    try:
        best = float("inf")
        for _run in range(runs):
            driver.get("about:blank")
            start = time.perf_counter()
            driver.get(html.as_uri())  # returns after the load event (page load strategy "normal")
            best = min(best, time.perf_counter() - start)
        return best
    finally:
        driver.quit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuops-report-bench-") as work:
        run_dir = Path(work) / "20261206T100000Z"
        build(run_dir, args.nodes)
        best = float("inf")
        for _run in range(args.runs):
            start = time.perf_counter()
            written = acceptance_report.write_reports(str(run_dir))
            best = min(best, time.perf_counter() - start)
        html = Path(written["html"])
        figures = {"write": best, "size": html.stat().st_size, "open": open_seconds(html, args.runs)}
    print(f"{args.nodes} nodes, {len(list(GOLDEN.glob('*.json')))} golden documents in turn")
    print(f"write the four reports: {figures['write']:.2f} s (goal <= {GOALS['write']:g} s)")
    print(f"report.html: {figures['size'] / 1e6:.2f} MB (goal <= {GOALS['size'] / 1e6:g} MB)")
    print(f"open in headless chromium: {figures['open']:.2f} s (goal <= {GOALS['open']:g} s)")
    return 0 if all(figures[k] <= GOALS[k] for k in GOALS) else 1


if __name__ == "__main__":
    sys.exit(main())
