"""The ClusterRole the k8s_node README documents is all the roles need through the Kubernetes API, and every right in
it is needed.

The stand-in API server (tests/bench/kube_apiserver.py) runs on this machine with RBAC on: the kubeconfig's token is
bound to the README's ClusterRole rules, and a request no rule allows gets the real API's 403. Through Ansible, the
calls the roles make: k8s_node's preflight (cluster info, the Node read), its labels and taints (a merge patch), and
the drain and uncordon every disruptive stage shares (roles/_common/tasks/kubernetes_node_{drain,uncordon}.yml).
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from apiserver_harness import NODE, apiserver, playbook, pod
from preflight_harness import ROOT, unfold

TOKEN = "gpuops-rights-test"
USER = "gpuops-bringup"


def documented_rules() -> list:
    """The rules of the ClusterRole in roles/k8s_node/README.md's yaml block."""
    readme = (ROOT / "roles" / "k8s_node" / "README.md").read_text()
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL)]
    (role,) = [b for b in blocks if isinstance(b, dict) and b.get("kind") == "ClusterRole"]
    return role["rules"]


def rights() -> list:
    """(resource, verb) of every right the ClusterRole grants."""
    return [(resource, verb) for rule in documented_rules() for resource in rule["resources"] for verb in rule["verbs"]]


def without(resource, verb) -> list:
    rules = []
    for rule in documented_rules():
        for name in rule["resources"]:
            verbs = [v for v in rule["verbs"] if (name, v) != (resource, verb)]
            if verbs:
                rules.append({"apiGroups": rule["apiGroups"], "resources": [name], "verbs": verbs})
    return rules


def run_the_roles_calls(tmp_path, rules):
    """(ansible-playbook's result, the Node, the pods, the requests RBAC refused) after the roles' calls with a token
    bound to rules."""
    with apiserver(tmp_path, token=TOKEN) as (state, kubeconfig):
        (state / "rbac.json").write_text(json.dumps({"tokens": {TOKEN: {"user": USER, "rules": rules}}}))
        pods = [pod("web"), pod("dcgm-exporter", owner="DaemonSet")]
        (state / "pods.json").write_text(json.dumps({f"jobs/{p['metadata']['name']}": p for p in pods}))
        node = {"name": NODE, "kubeconfig": str(kubeconfig), "drain_timeout": 5}
        drain, uncordon = (
            {"name": "gpuops.bringup._common", "tasks_from": f"kubernetes_node_{step}.yml"}
            for step in ("drain", "uncordon")
        )
        proc = playbook(tmp_path, [
            {"name": "Cluster info (k8s_node preflight)",
             "kubernetes.core.k8s_cluster_info": {"kubeconfig": str(kubeconfig)}},
            {"name": "Read the Node (k8s_node preflight, configure, verify)",
             "kubernetes.core.k8s_info": {"kind": "Node", "name": NODE, "kubeconfig": str(kubeconfig)}},
            {"name": "Label the Node (k8s_node configure)",
             "kubernetes.core.k8s": {"state": "patched", "merge_type": "merge", "kubeconfig": str(kubeconfig),
                                     "definition": {"apiVersion": "v1", "kind": "Node",
                                                    "metadata": {"name": NODE, "labels": {"gpuops.io/rack": "r1"}}}}},
            {"name": "Drain", "ansible.builtin.include_role": drain, "vars": {"__kubernetes_node": node}},
            {"name": "Uncordon", "ansible.builtin.include_role": uncordon, "vars": {"__kubernetes_node": node}},
        ])  # fmt: skip
        forbidden = state / "forbidden.jsonl"
        refused = [json.loads(line) for line in forbidden.read_text().splitlines()] if forbidden.exists() else []
        nodes, pods = (json.loads((state / name).read_text()) for name in ("nodes.json", "pods.json"))
        return proc, nodes[NODE], pods, refused


def test_the_documented_cluster_role_is_enough(tmp_path):
    proc, node, pods, refused = run_the_roles_calls(tmp_path, documented_rules())
    assert proc.returncode == 0, unfold(proc.stdout + proc.stderr)[-3000:]
    assert refused == []
    assert node["metadata"]["labels"] == {"gpuops.io/rack": "r1"}
    assert not node["spec"].get("unschedulable")
    assert sorted(pods) == ["jobs/dcgm-exporter"]


@pytest.mark.parametrize(("resource", "verb"), rights())
def test_every_right_of_it_is_needed(tmp_path, resource, verb):
    proc, _node, _pods, refused = run_the_roles_calls(tmp_path, without(resource, verb))
    assert proc.returncode != 0, unfold(proc.stdout + proc.stderr)[-3000:]
    # The right taken away, and nothing else, is what the API refused (the clients' messages rarely say which).
    assert {(r["verb"], r["resource"]) for r in refused} == {(verb, resource)}
