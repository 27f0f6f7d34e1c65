"""How a re-run of site.yml on a converged fleet scales with its size: a benchmark, not a test.

    python3 tests/bench/benchmark_fleet.py [--counts 1,8,16,32] [--json tests/output/benchmark_fleet.json]

It converges one seed node (the demo rack's 4x L40S node on Debian 13, simulated hardware, every stage but the
Kubernetes join and acceptance: copies of a joined node would be half-joined nodes, and acceptance measures anew on
every run), commits it as an image, and for each count starts that many copies of it and runs site.yml on them, which
must change nothing. Then, on an inventory of the largest count, it runs site.yml for one node (--limit) and compares
that with the same node in an inventory of its own: the cost of adding a node to a large inventory.

For each run: wall time, the controller's CPU time (ansible-playbook and its children: SSH, the modules' transfers),
and per node the task results executed (ok, changed included) and skipped, from the play recap. A table on stdout and
the figures as JSON. Run it from the repository root with the project's virtual environment on PATH, the bench set up
(make setup); it takes its nodes down at the end (--keep leaves them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "bench" / "bench.py"
GROUP = "fleet"
IMAGE = "fleet-l40s"
HARDWARE = "pcie_l40s_4gpu"
# The demo rack's settings for its L40S node (inventory/local.yml), without the Kubernetes join and NCCL stage.
FLEET_VARS = {
    "gpuops_mirror_url": "http://gpuops-mirror:8080",
    "bench_key_fingerprint": (
        "{{ (lookup('ansible.builtin.file', '" + str(ROOT / ".bench" / "mirror" / "mirror.json") + "')"
        " | from_json).local_repo_key_fingerprint }}"
    ),
    "nvidia_driver_cuda_repo_key_fingerprint": "{{ bench_key_fingerprint }}",
    "nvidia_container_toolkit_key_fingerprint": "{{ bench_key_fingerprint }}",
    "nvidia_driver_branch": "550",
    "rdma_fabric_gid_index": 3,
    "gpuops_kubernetes_join": False,
    "gpuops_nccl_tests": False,
}
RECAP = re.compile(r"^(\S+)\s*: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)


def bench(*args: str) -> str:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, check=True).stdout


def podman(*args: str) -> str:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=True).stdout


def image_exists() -> bool:
    return subprocess.run(["podman", "image", "exists", f"localhost/gpuops-node:{IMAGE}"], check=False).returncode == 0


def start(names: list[str], image: str, workdir: Path) -> Path:
    """Nodes of the image with the simulated L40S, and an inventory of them with the fleet's settings."""
    specs = [{"name": name, "image": image, "hardware": HARDWARE} for name in names]
    raw = workdir / "nodes.json"
    bench("nodes", "up", "--prefix", GROUP, json.dumps(specs), "--inventory", str(raw),
          "--groups", f"rack_{GROUP},{HARDWARE}")  # fmt: skip
    inventory = json.loads(raw.read_text())
    inventory["all"]["vars"] = FLEET_VARS
    path = workdir / "hosts.json"
    path.write_text(json.dumps(inventory, indent=2))
    # The hardware profiles' groups, as the shipped inventories have them beside.
    (workdir / "group_vars").unlink(missing_ok=True)
    (workdir / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
    return path


def site(inventory: Path, limit: str | None = None) -> dict:
    """site.yml without the join and acceptance: wall and controller CPU seconds, and each node's recap."""
    argv = ["ansible-playbook", "-i", str(inventory), "playbooks/site.yml", "--skip-tags", "acceptance"]
    argv += ["--limit", limit] if limit else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False,
                          env={**os.environ, "ANSIBLE_FORCE_COLOR": "0"})  # fmt: skip
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"site.yml failed ({inventory}):\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}")
    nodes = {
        host: {"executed": int(ok), "changed": int(changed), "skipped": int(skipped)}
        for host, ok, changed, _unreachable, _failed, skipped in RECAP.findall(proc.stdout)
    }
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 1), "controller_cpu_s": round(cpu, 1), "nodes": nodes}


def summary(label: str, count: int, run: dict) -> dict:
    nodes = run["nodes"].values()
    row = {
        "run": label,
        "nodes": count,
        "wall_s": run["wall_s"],
        "controller_cpu_s": run["controller_cpu_s"],
        "cpu_per_node_s": round(run["controller_cpu_s"] / count, 2),
        "executed_per_node": max(n["executed"] for n in nodes),
        "skipped_per_node": max(n["skipped"] for n in nodes),
        "changed": sum(n["changed"] for n in nodes),
    }
    print(f"{label:<28} {count:>3} nodes  {row['wall_s']:7.1f} s wall  {row['controller_cpu_s']:7.1f} s CPU "
          f"({row['cpu_per_node_s']:5.2f}/node)  {row['executed_per_node']:>4} executed  "
          f"{row['skipped_per_node']:>4} skipped per node  changed {row['changed']}", flush=True)  # fmt: skip
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="1,8,16,32", help="comma-separated fleet sizes")
    parser.add_argument("--json", default=str(ROOT / "tests" / "output" / "benchmark_fleet.json"))
    parser.add_argument("--keep", action="store_true", help="leave the nodes and the seed image")
    parser.add_argument("--reuse-seed", action="store_true", help="start from the seed image a --keep run left")
    args = parser.parse_args()
    counts = sorted(int(n) for n in args.counts.split(","))
    rows = []
    bench("nodes", "down", GROUP)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        try:
            if not (args.reuse_seed and image_exists()):
                seed = start(["seed"], "debian13", work)
                rows.append(summary("seed: first converge", 1, site(seed)))
                podman("commit", "--quiet", f"{GROUP}-seed", f"localhost/gpuops-node:{IMAGE}")
                bench("nodes", "down", GROUP)
            for count in counts:
                inventory = start([f"n{i:02d}" for i in range(1, count + 1)], IMAGE, work)
                rows.append(summary("no-op site.yml", count, site(inventory)))
            rows.append(summary(f"--limit n01 of {counts[-1]}", 1, site(inventory, limit="n01")))
            bench("nodes", "down", GROUP)
            alone = start(["n01"], IMAGE, work)
            rows.append(summary("n01 alone", 1, site(alone)))
        finally:
            if not args.keep:
                bench("nodes", "down", GROUP)
                subprocess.run(["podman", "rmi", "--force", f"localhost/gpuops-node:{IMAGE}"], capture_output=True,
                               check=False)  # fmt: skip
    ratio = rows[-2]["wall_s"] / rows[-1]["wall_s"]
    print(f"adding one node to {counts[-1]}: {ratio:.2f}x a lone node's no-op run (wall)")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "limit_vs_alone_wall": round(ratio, 2)}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
