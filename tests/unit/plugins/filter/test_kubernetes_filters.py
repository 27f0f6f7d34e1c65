"""The k8s_node_* filters: registered, and handing the module_utils plain values."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import kubernetes


def test_the_filters_are_registered():
    assert sorted(kubernetes.FilterModule().filters()) == [
        "k8s_node_join_command",
        "k8s_node_labels",
        "k8s_node_patch",
        "k8s_node_preflight",
        "k8s_node_ready",
        "k8s_node_verify",
        "k8s_node_verify_problems",
        "kubernetes_drain_leftovers",
    ]


VERIFY_KEYS = ("version", "packages", "sandbox_image", "nvidia", "labels", "taints", "prefix", "node_name")
TABLES = {"supported": {"debian": ["13"]}, "kernel_modules": [], "sysctl": {}}
READS = {"inventory_hosts": ["cp"], "kubeconfig_problem": None, "control_plane": {"version": "v1.35.9"}}


def test_a_few_calls():
    variables = {"k8s_node_kubernetes_version": "1.35.9-1.1", "k8s_node_repo_url": "https://pkgs.k8s.io/x/",
                 "k8s_node_control_plane_host": "cp", "k8s_node_control_plane_version": "", "k8s_node_labels": {},
                 "k8s_node_join_token": "", "k8s_node_ca_cert_hash": "", "k8s_node_api_endpoint": "",
                 "k8s_node_label_prefix": "gpuops.io", "k8s_node_taints": [], "k8s_node_key_url": "https://k.example/k",
                 "k8s_node_key_sha256": "a" * 64, "gpuops_kubernetes_join": True}  # fmt: skip
    node = {"os": {"id": "debian", "major": "13"}, "capabilities": {"own_kernel": False}}
    assert kubernetes.k8s_node_preflight(node, "n1", variables, TABLES, READS) == {"problems": []}
    assert kubernetes.k8s_node_join_command("nothing")["problem"] == "it printed no `kubeadm join` line"
    assert kubernetes.k8s_node_labels({}, {"profile": "p"}, "r", "gpuops.io", {}) == {
        "gpuops.io/rack": "r", "gpuops.io/hardware-profile": "p"}  # fmt: skip
    assert kubernetes.k8s_node_ready({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}) is True
    assert kubernetes.k8s_node_patch({"metadata": {"labels": {"a": "1"}}}, {"a": "1"}, [], "gpuops.io") == {}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: kubernetes.k8s_node_preflight({}, "n1", [], TABLES, READS),
            "k8s_node_preflight needs the role's variables",
        ),
        (
            lambda: kubernetes.k8s_node_preflight({}, "n1", {}, {"supported": {}}, READS),
            "k8s_node_preflight needs the role's tables with kernel_modules, sysctl",
        ),
        (lambda: kubernetes.k8s_node_preflight({}, "n1", {}, TABLES, None), "k8s_node_preflight needs the reads"),
        (lambda: kubernetes.k8s_node_patch("", {}, [], "p"), "k8s_node_patch needs the Node object"),
        (lambda: kubernetes.k8s_node_ready(None), "k8s_node_ready needs the Node object"),
        (
            lambda: kubernetes.k8s_node_verify("", "n1", {}, {"version": "1"}, {}, True),
            "k8s_node_verify needs the role's settings with packages, sandbox_image, nvidia",
        ),
        (
            lambda: kubernetes.k8s_node_verify("", "n1", {}, dict.fromkeys(VERIFY_KEYS, ""), None, True),
            "k8s_node_verify needs gpu_facts' gpu",
        ),
    ],
)
def test_wrong_arguments_are_filter_errors(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


def test_k8s_node_verify_reads_a_boolean_given_as_a_string():
    settings = {**dict.fromkeys(VERIFY_KEYS, ""), "nvidia": "false", "version": "1.31.4-1.1", "node_name": "n1"}
    found = kubernetes.k8s_node_verify("", "n1", {}, settings, {}, True)
    assert "nvidia runtime);" not in found["passed"]
    assert (
        "nvidia runtime);"
        in kubernetes.k8s_node_verify("", "n1", {}, {**settings, "nvidia": "true"}, {}, True)["passed"]
    )
