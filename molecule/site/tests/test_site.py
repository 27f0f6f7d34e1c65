"""site.yml end to end on one simulated node: the verdict acceptance reached after every stage ran, each check's
status, what the stages left that acceptance read (the pinned driver, the joined Node), the documents against their
schemas."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema

REPORTS = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports"
ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
# A healthy simulated H100 node after site.yml: fabric manager, installed and enabled by stage 2, cannot start
# without an NVIDIA module in the container's kernel (WARN); the node left the NCCL stage (Debian 12 has no NCCL) and
# ib_write_bw has no partner on a rack of one, so those are reported, not required (host_vars/node.yml); stage 2's
# DCGM runs the profile's level-1 diagnostic (its stand-in replays the capture); a container's kernel is its host's,
# so CUDA and the GPU container do not apply; no device plugin runs in the bench's cluster; the inventory gives the
# node no gpuops_system_serial.
EXPECTED = {
    "gpu.count": "PASS", "gpu.model": "PASS", "gpu.pcie": "PASS", "gpu.ecc": "PASS", "gpu.memory": "PASS",
    "gpu.recovery": "PASS", "gpu.nvlink": "PASS", "gpu.fabric": "PASS", "gpu.clocks": "PASS", "gpu.xid": "PASS",
    "gpu.dcgm": "PASS", "driver.version": "PASS", "driver.persistence": "PASS", "driver.fabric_manager": "WARN",
    "fabric.ports": "PASS", "fabric.counters": "PASS", "fabric.bandwidth": "SKIPPED", "inventory.vbios": "PASS",
    "inventory.hca_firmware": "PASS", "inventory.system_serial": "SKIPPED", "nccl.single_node": "SKIPPED",
    "nccl.pairs": "SKIPPED",
    "cuda.runtime": "SKIPPED", "container.gpus": "SKIPPED", "kubernetes.ready": "PASS", "kubernetes.labels": "PASS",
    "kubernetes.gpus": "SKIPPED",
}  # fmt: skip


def run() -> Path:
    (only,) = [p for p in REPORTS.iterdir() if (p / "run.json").is_file()]
    return only


def document() -> dict:
    return json.loads((run() / "nodes" / "node.json").read_text())


def test_the_node_is_accepted_with_every_check_in_its_status() -> None:
    data = document()
    assert {c["id"]: c["status"] for c in data["checks"]} == EXPECTED
    assert (data["verdict"], data["accepted"]) == ("accepted", True)
    assert data["summary"] == "[SIMULATED hgx_h100_8gpu] node (hgx_h100_8gpu): ACCEPTED (19 PASS, 1 WARN, 7 SKIPPED)"


def test_acceptance_read_what_the_stages_left() -> None:
    data = document()
    checks = {c["id"]: c for c in data["checks"]}
    # Stage 2's pinned driver, as DKMS built it: the simulation presents it in place of the capture's.
    assert data["inventory"]["driver"]["loaded"] == "550.144.03"
    assert checks["driver.version"]["reason"] == "loaded 550.144.03, the installed driver"
    assert checks["driver.fabric_manager"]["reason"].startswith(
        "nvidia-fabricmanager 550.144.03 is installed at the driver's version and enabled"
    )
    # Stage 2's DCGM, pinned: the diagnostic acceptance ran through it.
    assert checks["gpu.dcgm"]["reason"] == "DCGM 3.1.0: 10 test(s) passed, 0 skipped"
    # Stage 4's join: the Node the stand-in kubelet registered, labelled from the GPUs.
    assert checks["kubernetes.ready"]["reason"] == "the Node is Ready (kubelet v1.35.9)"
    assert checks["kubernetes.labels"]["value"] == {
        "gpuops.io/hardware-profile": "hgx_h100_8gpu",
        "gpuops.io/gpu.count": "8",
    }
    # The NCCL stage left on the node's variable, before the role.
    assert "the nccl_tests stage" in checks["nccl.single_node"]["reason"]


def test_the_documents_follow_their_schemas() -> None:
    schemas = {
        name: json.loads((ROOT / "schemas" / f"acceptance-{name}.schema.json").read_text()) for name in ("node", "run")
    }
    jsonschema.validate(document(), schemas["node"])
    summary = json.loads((run() / "run.json").read_text())
    jsonschema.validate(summary, schemas["run"])
    assert summary["totals"] == {"accepted": 1, "rejected": 0, "incomplete": 0, "nodes": 1}
