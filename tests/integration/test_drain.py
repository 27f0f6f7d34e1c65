"""A drain that leaves pods on the node fails, naming them; one that empties it passes.

The collection's drain (roles/_common/tasks/kubernetes_node_drain.yml, which the driver's upgrade and k8s_node's
upgrade share) runs through Ansible against the bench's stand-in API server, started here on this machine: a Node
with a pod whose eviction the API accepts but which keeps running (kubernetes.core.k8s_drain only warns when its wait
times out), a pod that goes, and a DaemonSet's pod (which a drain leaves by design).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from preflight_harness import ROOT, unfold

APISERVER = ROOT / "tests" / "bench" / "kube_apiserver.py"
NODE = "gpu-node-07"


def pod(name, owner="ReplicaSet", eviction=None):
    annotations = {"gpuops.test/eviction": eviction} if eviction else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "jobs", "uid": name, "annotations": annotations,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner, "name": owner.lower(), "uid": "1"}]},
        "spec": {"nodeName": NODE, "containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.2.2-base"}]},
        "status": {"phase": "Running"},
    }  # fmt: skip


@pytest.fixture
def api(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "n"}, "spec": {}, "status": {}}
    (state / "nodes.json").write_text(json.dumps({NODE: node}))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(APISERVER)],
        env={**os.environ, "GPUOPS_APISERVER_STATE": str(state), "GPUOPS_APISERVER_LISTEN": f"127.0.0.1:{port}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _attempt in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n"
    )
    kubeconfig.chmod(0o600)
    try:
        yield state, kubeconfig
    finally:
        server.terminate()
        server.wait()


def drain(tmp_path: Path, kubeconfig: Path) -> subprocess.CompletedProcess:
    play = [{
        "hosts": "all",
        "gather_facts": False,
        "tasks": [{
            "name": "Drain",
            "ansible.builtin.include_role": {"name": "gpuops.bringup._common",
                                             "tasks_from": "kubernetes_node_drain.yml"},
            "vars": {"__kubernetes_node": {"name": NODE, "kubeconfig": str(kubeconfig), "drain_timeout": 3}},
        }],
    }]  # fmt: skip
    (tmp_path / "play.json").write_text(json.dumps(play))
    return subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
         str(tmp_path / "play.json")],
        cwd=ROOT, capture_output=True, text=True, check=False, env={**os.environ, "ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip


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
