"""The hardware check on simulated nodes: each node's report, and the playbook's gate."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

REPORTS = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports"
ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
# Node -> (passed with the default gate, the problems' (severity, code), worst first).
EXPECTED = {
    "h100": (True, []),
    "l40s": (True, []),
    "h100-gpu-missing": (False, [("error", "gpu_count_low")]),
    "h100-xid79": (False, [("error", "xid_79"), ("error", "fallen_off_bus")]),
    "h100-pcie-degraded": (True, [("warning", "pcie_link_degraded")]),
    "h100-remap-failure": (False, [("error", "remap_failure"), ("warning", "remap_pending")]),
    "h100-ib-port-down": (False, [("error", "active_ports_low"), ("warning", "port_polling")]),
    "h100-no-driver": (False, [("error", "driver_unreachable"), ("error", "gpu_count_low")]),
}


def report(node: str) -> dict:
    return json.loads((REPORTS / f"{node}.json").read_text())


@pytest.mark.parametrize("node", sorted(EXPECTED))
def test_report_judges_the_node(node: str) -> None:
    data = report(node)
    _gate, problems = EXPECTED[node]
    assert [(p["severity"], p["code"]) for p in data["problems"]] == problems
    assert data["passed"] is True  # converge reports only (hardware_check_fail_on: never)
    assert data["simulated"]["profile"] == data["profile"] or data["simulated"]["profile"].startswith(data["profile"])
    assert data["summary"].startswith(f"[SIMULATED {data['simulated']['profile']}] {node} ({data['profile']}): ")


def test_healthy_nodes_see_their_profile() -> None:
    h100, l40s = report("h100"), report("l40s")
    assert (h100["gpu"]["count"], h100["gpu"]["models"]) == (8, ["NVIDIA H100 80GB HBM3"])
    assert h100["gpu"]["fabric_states"] == ["Completed"]
    assert (h100["infiniband"]["active_ports"], h100["infiniband"]["rates_gbps"]) == (8, [400])
    assert (l40s["gpu"]["count"], l40s["gpu"]["models"]) == (4, ["NVIDIA L40S"])
    assert (l40s["infiniband"]["active_ports"], l40s["infiniband"]["link_layer"]) == (2, "Ethernet")
    assert h100["kernel_log"]["source"] == "dmesg"


def test_the_gate_fails_exactly_the_faulty_nodes() -> None:
    """The playbook with its default gate (errors fail a node): each faulty node fails with its reasons."""
    proc = subprocess.run(
        [
            "ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"],
            str(ROOT / "playbooks" / "hardware_check.yml"), "-e", f"hardware_check_report_dir={REPORTS}-gate",
        ],
        capture_output=True, text=True, check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip
    recap = dict(re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=(\d)", proc.stdout, re.M))
    assert recap == {node: "0" if passed else "1" for node, (passed, _problems) in EXPECTED.items()}, proc.stdout[
        -4000:
    ]
    # Failed tasks may print on stderr (display_failed_stderr).
    output = " ".join((proc.stdout + proc.stderr).split())
    assert "[SIMULATED hgx_h100_8gpu_gpu_missing] h100-gpu-missing (hgx_h100_8gpu): 7/8 GPUs" in output
    assert "nvidia-smi sees 7 GPUs; this node should have 8" in output
    assert "xid_79 on 0000:a1:00.0: GPU has fallen off the bus. Action: Drain the node" in output
