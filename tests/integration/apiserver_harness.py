"""The bench's stand-in API server (tests/bench/kube_apiserver.py) started on this machine for one test, with a
Node, and a kubeconfig that reaches it: what the tests of the roles' Kubernetes API calls run against."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from preflight_harness import ROOT

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


@contextlib.contextmanager
def apiserver(tmp_path: Path, token: str | None = None):
    """(state directory, kubeconfig) of a running stand-in API server holding NODE; with token, the kubeconfig
    authenticates with it (the test writes rbac.json to give it rights)."""
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
    user = f"{{token: {token}}}" if token else "{}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        f"contexts: [{{name: c, context: {{cluster: c, user: u}}}}]\ncurrent-context: c\n"
        f"users: [{{name: u, user: {user}}}]\n"
    )
    kubeconfig.chmod(0o600)
    try:
        yield state, kubeconfig
    finally:
        server.terminate()
        server.wait()


def playbook(tmp_path: Path, tasks: list) -> subprocess.CompletedProcess:
    """ansible-playbook of tasks on localhost (the controller, where the roles' API calls run)."""
    (tmp_path / "play.json").write_text(json.dumps([{"hosts": "all", "gather_facts": False, "tasks": tasks}]))
    return subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
         str(tmp_path / "play.json")],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
