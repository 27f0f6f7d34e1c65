"""A node that does not become Ready: the role waits k8s_node_ready_timeout and fails naming the Ready condition's
reason, as a kubelet without a CNI reports it. kubelet (the stand-in, which posts Ready every 10 s) is stopped on
the cpu node and its Node's Ready condition set to what a real kubelet posts before the network plugin is up; both
are put back afterwards (kubelet posts Ready again), before the tests that rejoin cpu.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# Each test reads every node itself: it runs once, on the control plane's turn.
pytestmark = pytest.mark.on("cp")

KUBECTL = "kubectl --kubeconfig /etc/kubernetes/admin.conf"
CONVERGE = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml"
# What kubelet posts while the container runtime's network is not ready (no CNI configured yet).
NOT_READY = {
    "type": "Ready",
    "status": "False",
    "reason": "KubeletNotReady",
    "message": "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized",
}


def test_a_node_that_stays_not_ready_fails_with_the_reason(host, stage_run):
    cpu = host.get_host("ansible://cpu", ansible_inventory=host.backend.ansible_inventory)
    cpu.run_expect([0], "systemctl stop kubelet")
    try:
        patch = json.dumps({"status": {"conditions": [NOT_READY]}})
        host.run_expect([0], f"{KUBECTL} patch node cpu --subresource=status --type=merge -p '{patch}'")
        rc, output = stage_run(CONVERGE, "k8s_node_configure", ["--limit", "cpu", "-e", "k8s_node_ready_timeout=10"])
    finally:
        cpu.run_expect([0], "systemctl start kubelet")
    assert rc != 0
    assert (
        "cpu: the Node cpu is not Ready after 10 s (k8s_node_ready_timeout): Ready is False (KubeletNotReady: "
        "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady" in output
    ), output[-3000:]
    assert "Fix: read kubelet's journal on the node (journalctl -u kubelet)" in output
    # Nothing was patched on a node that is not Ready: the labels step comes after the wait.
    assert "TASK [gpuops.bringup.k8s_node : Label and taint the node]" not in output


def test_the_node_is_ready_again_once_kubelet_runs(host):
    # The stand-in kubelet posts its status every 10 s.
    for _attempt in range(30):
        node = json.loads(host.check_output(f"{KUBECTL} get node cpu -o json"))
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        if ready["status"] == "True":
            return
        host.run("sleep 1")
    pytest.fail(f"cpu did not become Ready again: {ready}")
