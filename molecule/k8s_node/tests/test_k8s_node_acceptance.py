"""The acceptance stage's Kubernetes checks on the joined gpu node: its Node object read from the controller through
the stand-in API server (prepare.yml's admin.conf), as the stage reads it after this one in site.yml."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

# Each test reads every node itself: it runs once, on the control plane's turn.
pytestmark = pytest.mark.on("cp")

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
KUBECTL = "kubectl --kubeconfig /etc/kubernetes/admin.conf"
K8S = ("kubernetes.ready", "kubernetes.labels", "kubernetes.gpus")


def accept(stage_run, results):
    rc, output = stage_run(
        ROOT / "playbooks" / "acceptance.yml",
        "acceptance",
        ["--limit", "gpu", "-e", f"acceptance_kubeconfig={EPHEMERAL / 'admin.conf'}",
         "-e", f"acceptance_results_dir={results}", "-e", "acceptance_fail_unaccepted=false",
         "-e", "acceptance_counter_interval=1"],
    )  # fmt: skip
    assert rc == 0, output[-3000:]
    # The latest run's directory (beside the runs, the results directory's index.html).
    (run,) = sorted(p for p in results.iterdir() if p.is_dir())[-1:]
    document = json.loads((run / "nodes" / "gpu.json").read_text())
    return {c["id"]: c for c in document["checks"] if c["id"] in K8S}


def test_the_joined_node_is_ready_labelled_and_without_a_device_plugin_its_gpus_are_not_required(
    host, stage_run, tmp_path
):
    checks = accept(stage_run, tmp_path)
    assert (checks["kubernetes.ready"]["status"], checks["kubernetes.ready"]["reason"]) == (
        "PASS", "the Node is Ready (kubelet v1.35.9)")  # fmt: skip
    assert checks["kubernetes.labels"]["status"] == "PASS"
    assert checks["kubernetes.labels"]["value"] == {
        "gpuops.io/hardware-profile": "pcie_l40s_4gpu",
        "gpuops.io/gpu.count": "4",
    }
    gpus = checks["kubernetes.gpus"]
    assert (gpus["status"], gpus["required"]) == ("SKIPPED", False)
    assert gpus["reason"].startswith("not applicable: no device plugin advertises nvidia.com/gpu")


def test_a_device_plugin_offering_fewer_gpus_fails_the_node(host, stage_run, tmp_path):
    """What the NVIDIA device plugin posts (capacity and allocatable nvidia.com/gpu), one GPU short."""
    patch = json.dumps({"status": {"capacity": {"nvidia.com/gpu": "4"}, "allocatable": {"nvidia.com/gpu": "3"}}})
    host.run_expect([0], f"{KUBECTL} patch node gpu --subresource=status --type=merge -p '{patch}'")
    try:
        checks = accept(stage_run, tmp_path)
    finally:
        undo = json.dumps({"status": {"capacity": {"nvidia.com/gpu": None}, "allocatable": {"nvidia.com/gpu": None}}})
        host.run_expect([0], f"{KUBECTL} patch node gpu --subresource=status --type=merge -p '{undo}'")
    gpus = checks["kubernetes.gpus"]
    assert (gpus["status"], gpus["fault"], gpus["required"]) == ("FAIL", "k8s_gpus_missing", True)
    assert gpus["reason"] == "the Node offers 3 nvidia.com/gpu to pods (capacity 4), the profile has 4"


def test_the_verdict_marks_the_node_and_an_accepting_run_takes_the_taint_off(host, stage_run, tmp_path):
    """acceptance_kubernetes_mark: the verdict as a label; a NoSchedule taint while the node is not accepted (the
    node's own taint, stage 4's, stays); a run that accepts the node takes the taint off."""
    mark = "acceptance.gpuops.io/verdict"
    common = ["--limit", "gpu", "-e", f"acceptance_kubeconfig={EPHEMERAL / 'admin.conf'}",
              "-e", "acceptance_fail_unaccepted=false", "-e", "acceptance_counter_interval=1",
              "-e", "acceptance_kubernetes_mark=true"]  # fmt: skip

    def node():
        return json.loads(host.check_output(f"{KUBECTL} get node gpu -o json"))

    try:
        rc, output = stage_run(ROOT / "playbooks" / "acceptance.yml", "acceptance",
                               [*common, "-e", f"acceptance_results_dir={tmp_path / 'first'}"])  # fmt: skip
        assert rc == 0, output[-3000:]
        (run,) = [p for p in (tmp_path / "first").iterdir() if p.is_dir()]
        verdict = json.loads((run / "nodes" / "gpu.json").read_text())["verdict"]
        # No driver is installed here (see molecule.yml): the node is not accepted.
        assert verdict in ("rejected", "incomplete")
        got = node()
        assert got["metadata"]["labels"][mark] == verdict
        assert got["spec"]["taints"] == [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
            {"key": mark, "value": verdict, "effect": "NoSchedule"},
        ]

        required = json.dumps({"acceptance_required": ["kubernetes.ready", "kubernetes.labels"]})
        second = [*common, "-e", f"acceptance_results_dir={tmp_path / 'second'}", "-e", required]
        rc, output = stage_run(ROOT / "playbooks" / "acceptance.yml", "acceptance", second)
        assert rc == 0, output[-3000:]
        # The mark is the run's one change: the results are a record, not managed state.
        assert re.search(r"\bgpu : ok=\d+ changed=1 ", output), output[-3000:]
        got = node()
        assert got["metadata"]["labels"][mark] == "accepted"
        assert got["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    finally:
        # What stage 4 left (test_k8s_node.py reads it): the node's own taint, no verdict label.
        undo = json.dumps({"metadata": {"labels": {mark: None}}, "spec": {"taints": [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}})  # fmt: skip
        host.run_expect([0], f"{KUBECTL} patch node gpu --type=merge -p '{undo}'")
