"""A joined node at another patch version is taken out of service, upgraded and put back: the gpu node is moved to
1.35.8-1.1 by hand (as if it had joined at that version), then the role's install, join, configure and verify phases
run with the pinned 1.35.9-1.1. The role cordons, drains and uncordons it through the stand-in API from the
controller (kubernetes.core.k8s_drain); Debian's real kubectl on cp reads the result.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

# The gpu node is upgraded once, and its tests read it.
pytestmark = pytest.mark.on("gpu")

KUBECTL = "kubectl --kubeconfig /etc/kubernetes/admin.conf"
OLDER = "1.35.8-1.1"


@pytest.fixture(scope="module")
def upgrade(host):
    host.check_output(
        f"apt-mark unhold kubeadm kubelet kubectl >/dev/null && apt-get install -y -q --allow-downgrades "
        f"kubeadm={OLDER} kubelet={OLDER} kubectl={OLDER} >/dev/null && systemctl restart kubelet"
    )
    return subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "--limit", "gpu", "--tags",
         "k8s_node_install,k8s_node_join,k8s_node_configure,k8s_node_verify",
         os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "converge.yml")],
        capture_output=True, text=True, check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip


def changed(output, task):
    return re.search(rf"TASK \[[^]]*{re.escape(task)}[^]]*\].*?\n(changed|ok|skipping)", output, re.DOTALL)


def test_the_upgrade_drained_upgraded_and_put_the_node_back(host, upgrade):
    output = upgrade.stdout + upgrade.stderr
    assert upgrade.returncode == 0, output[-4000:]
    for task in (
        "Cordon and drain the Kubernetes node",
        "Install kubeadm, kubelet and kubectl at the pinned",
        "Upgrade the node's kubelet configuration",
        "Uncordon the Kubernetes node",
    ):
        assert changed(output, task).group(1) == "changed", task
    # The join phase left the joined node alone.
    assert changed(output, "Join with kubeadm").group(1) == "skipping"
    assert "gpu passed k8s_node verification" in output
    assert [c["command"] for c in map(json.loads, host.file("/var/lib/gpuops-standin/kubeadm/calls.jsonl")
            .content_string.splitlines())][-1] == "upgrade node"  # fmt: skip


def test_the_node_is_back_in_service_at_the_new_version(host, upgrade):
    cp = host.get_host("ansible://cp", ansible_inventory=host.backend.ansible_inventory)
    node = json.loads(cp.check_output(f"{KUBECTL} get node gpu -o json"))
    assert not node["spec"].get("unschedulable")
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.35.9"
    assert host.check_output("dpkg-query -W -f '${Version}' kubelet") == "1.35.9-1.1"
