"""Traps an operator falls into, each shown closed through Ansible itself."""

from __future__ import annotations

import configparser
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_forgotten_inventory_reaches_no_bench_node():
    """ansible.cfg names no inventory: a stage run from this repository without -i matches no host, so it never
    touches the test bench's rack (inventory/local.yml) by accident."""
    config = configparser.ConfigParser()
    config.read(ROOT / "ansible.cfg")
    assert "inventory" not in config["defaults"]
    listing = subprocess.run(["ansible-inventory", "--list"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert "gpu-node-01" not in listing.stdout
    proc = subprocess.run(["ansible-playbook", "--list-hosts", "playbooks/os_baseline.yml"], cwd=ROOT,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert "gpu-node" not in proc.stdout + proc.stderr
    # The same with the rack named: its three nodes.
    named = subprocess.run(
        ["ansible-playbook", "-i", "inventory/local.yml", "--list-hosts", "playbooks/os_baseline.yml"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert named.returncode == 0 and all(f"gpu-node-0{n}" in named.stdout for n in (1, 2, 3)), named.stderr
