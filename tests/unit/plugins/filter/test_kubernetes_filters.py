"""The k8s_node_* filters: registered, and handing the module_utils plain values."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import kubernetes


def test_the_filters_are_registered():
    assert sorted(kubernetes.FilterModule().filters()) == [
        "k8s_node_input_problems",
        "k8s_node_join_command",
        "k8s_node_labels",
        "k8s_node_patch",
        "k8s_node_ready",
        "k8s_node_skew_problem",
        "k8s_node_verify_problems",
        "kubernetes_drain_leftovers",
    ]


def test_a_few_calls():
    assert kubernetes.k8s_node_skew_problem("1.31.4-1.1", "v1.31.4", "x") is None
    assert kubernetes.k8s_node_join_command("nothing")["problem"] == "it printed no `kubeadm join` line"
    assert kubernetes.k8s_node_labels({}, {"profile": "p"}, "r", "gpuops.io", {}) == {
        "gpuops.io/rack": "r", "gpuops.io/hardware-profile": "p"}  # fmt: skip
    assert kubernetes.k8s_node_ready({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}) is True
    assert kubernetes.k8s_node_patch({"metadata": {"labels": {"a": "1"}}}, {"a": "1"}, [], "gpuops.io") == {}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: kubernetes.k8s_node_input_problems([]), "k8s_node_input_problems needs the role's variables"),
        (lambda: kubernetes.k8s_node_patch("", {}, [], "p"), "k8s_node_patch needs the Node object"),
        (lambda: kubernetes.k8s_node_ready(None), "k8s_node_ready needs the Node object"),
    ],
)
def test_wrong_arguments_are_filter_errors(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()
