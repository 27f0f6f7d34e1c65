"""A drain that leaves pods on the node fails, naming them; one that empties it passes.

The collection's drain (roles/_common/tasks/kubernetes_node_drain.yml, which the driver's upgrade and k8s_node's
upgrade share) runs through Ansible against the bench's stand-in API server, started here on this machine: a Node
with a pod whose eviction the API accepts but which keeps running (kubernetes.core.k8s_drain only warns when its wait
times out), a pod that goes, and a DaemonSet's pod (which a drain leaves by design).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apiserver_harness import NODE, apiserver, playbook, pod
from preflight_harness import unfold


@pytest.fixture
def api(tmp_path):
    with apiserver(tmp_path) as running:
        yield running


def drain(tmp_path: Path, kubeconfig: Path):
    return playbook(tmp_path, [{
        "name": "Drain",
        "ansible.builtin.include_role": {"name": "gpuops.bringup._common", "tasks_from": "kubernetes_node_drain.yml"},
        "vars": {"__kubernetes_node": {"name": NODE, "kubeconfig": str(kubeconfig), "drain_timeout": 3}},
    }])  # fmt: skip


def test_pods_left_by_a_timed_out_drain_fail_it(tmp_path, api):
    state, kubeconfig = api
    pods = [pod("trainer", eviction="ignored"), pod("web"), pod("dcgm-exporter", owner="DaemonSet")]
    (state / "pods.json").write_text(json.dumps({f"jobs/{p['metadata']['name']}": p for p in pods}))
    proc = drain(tmp_path, kubeconfig)
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode != 0, output[-3000:]
    assert (
        f"localhost: the Node {NODE} is cordoned, but after 3 s these pods still run on it: jobs/trainer. Nothing "
        "else was changed; the node stays cordoned."
    ) in output, output[-3000:]
    nodes = json.loads((state / "nodes.json").read_text())
    assert nodes[NODE]["spec"].get("unschedulable") is True
    assert sorted(json.loads((state / "pods.json").read_text())) == ["jobs/dcgm-exporter", "jobs/trainer"]


def test_a_drain_that_empties_the_node_passes(tmp_path, api):
    state, kubeconfig = api
    pods = [pod("web"), pod("dcgm-exporter", owner="DaemonSet")]
    (state / "pods.json").write_text(json.dumps({f"jobs/{p['metadata']['name']}": p for p in pods}))
    proc = drain(tmp_path, kubeconfig)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert sorted(json.loads((state / "pods.json").read_text())) == ["jobs/dcgm-exporter"]
