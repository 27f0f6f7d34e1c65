"""Which hosts the stage playbooks target: every host but the cluster's control plane, and no warning about that group
on an inventory that has none (a Slurm rack, a node added alone). Ansible only lists the hosts (--list-hosts): nothing
connects to them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STAGES = ["os_baseline", "nvidia_driver", "cuda_toolkit", "rdma_fabric", "nccl_tests", "nvidia_container_toolkit",
          "k8s_node", "acceptance"]  # fmt: skip
NODES = "all:\n  hosts:\n    gpu-a:\n    gpu-b:\n"
CONTROL_PLANE = "  children:\n    kube_control_plane:\n      hosts:\n        k8s-cp-01:\n"


def list_hosts(tmp_path: Path, inventory: str) -> tuple[list[list[str]], str]:
    """Each stage play's hosts, in the playbooks' order, and the whole output."""
    path = tmp_path / "hosts.yml"
    path.write_text(inventory)
    proc = subprocess.run(
        ["ansible-playbook", "--list-hosts", "-i", str(path), *(f"playbooks/{s}.yml" for s in STAGES)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    plays = [block.split() for block in re.findall(r"hosts \(\d+\):\n((?:\s{6}\S+\n?)*)", proc.stdout)]
    return plays, output


@pytest.mark.parametrize("inventory", [NODES, NODES + CONTROL_PLANE], ids=["without_control_plane", "with_it"])
def test_every_stage_targets_the_rack_nodes_only_and_warns_of_nothing(tmp_path, inventory):
    plays, output = list_hosts(tmp_path, inventory)
    assert len(plays) >= len(STAGES), output
    assert all(sorted(hosts) == ["gpu-a", "gpu-b"] for hosts in plays), output
    assert "WARNING" not in output, output
