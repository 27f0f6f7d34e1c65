"""k8s_node's bad input fails in preflight, before any change, with a message naming the variable, the value and the
fix, every problem of the node in one failure. The cases run against the machine running the tests, in check mode:
preflight reads it (os_facts) and the API (none answers here) before it judges, so what this machine lacks for
kubelet (modules, swap) and the API's problem may join a case's list; each case checks its own sentences. The version
skew cases give the control plane's version as k8s_node_control_plane_version (the Molecule scenario reads it from the
API server instead).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from preflight_harness import CaseRun, assert_fails_with, bench_nodes, local_cases, node_cases, run_local

PLAYBOOK = Path(__file__).with_name("k8s_node_preflight.yml")
TAG = "k8s_node_preflight"
TOKEN = "abcdef.0123456789abcdef"
CA_HASH = "sha256:" + "5538f945803316dcf8ce6fb652c7e1fe99ec131e97743147871fbc74d488c2a3"
# A node given its token from the vault: the base of every case that is not about the token's source.
VAULT = {"k8s_node_join_token": TOKEN, "k8s_node_ca_cert_hash": CA_HASH, "k8s_node_api_endpoint": "cp.example:6443",
         "k8s_node_control_plane_version": "v1.35.9"}  # fmt: skip

CASES = {
    "no_control_plane_and_no_token": (
        {"k8s_node_control_plane_version": "v1.35.9"},
        [
            "k8s_node_control_plane_host is empty and no k8s_node_join_token is given: nothing can create or supply "
            "the bootstrap token to join with. Fix: k8s_node_control_plane_host: <an inventory host of the control "
            "plane> (the role runs kubeadm token create there, with a short TTL), or k8s_node_join_token and "
            "k8s_node_ca_cert_hash from your vault",
        ],
    ),
    "ca_hash_malformed": (
        {**VAULT, "k8s_node_ca_cert_hash": "sha256:5538F945"},
        [
            'k8s_node_ca_cert_hash is "sha256:5538F945", not "sha256:" and the 64 lower-case hex digits of the '
            "SHA-256 of the cluster CA's public key. Fix: the --discovery-token-ca-cert-hash value kubeadm prints",
        ],
    ),
    "ca_hash_without_prefix": (
        {**VAULT, "k8s_node_ca_cert_hash": CA_HASH.removeprefix("sha256:")},
        [f'k8s_node_ca_cert_hash is "{CA_HASH.removeprefix("sha256:")}", not "sha256:" and the 64 lower-case hex'],
    ),
    "token_malformed_and_not_shown": (
        {**VAULT, "k8s_node_join_token": "ABCDEF.0123456789abcdef"},
        [
            "k8s_node_join_token is not a bootstrap token (six and sixteen characters of [a-z0-9] joined by a dot; "
            "the value is not shown).",
        ],
    ),
    "token_without_ca_hash": (
        {**VAULT, "k8s_node_ca_cert_hash": ""},
        ["k8s_node_join_token is given but k8s_node_ca_cert_hash is empty: a join must pin the cluster CA."],
    ),
    "kubelet_newer_than_the_control_plane": (
        {**VAULT, "k8s_node_control_plane_version": "v1.34.8"},
        [
            "k8s_node_kubernetes_version is 1.35.9-1.1 (v1.35.9), newer than the control plane's v1.34.8 "
            "(k8s_node_control_plane_version): a kubelet must not be newer than the API server. Fix: "
            "k8s_node_kubernetes_version of v1.34 (and its repository), or upgrade the control plane first.",
        ],
    ),
    "kubeadm_two_minors_older_than_the_control_plane": (
        {**VAULT, "k8s_node_control_plane_version": "v1.37.2"},
        [
            "k8s_node_kubernetes_version is 1.35.9-1.1 (v1.35.9), 2 minor versions older than the control plane's "
            "v1.37.2 (k8s_node_control_plane_version): kubeadm joins a control plane of its own minor version or "
            "the next one only. Fix: k8s_node_kubernetes_version of v1.37 or v1.36 (and its repository).",
        ],
    ),
    "version_and_repository_of_different_minors": (
        {**VAULT, "k8s_node_kubernetes_version": "1.34.1-1.1"},
        [
            "k8s_node_repo_url is https://pkgs.k8s.io/core:/stable:/v1.35/deb, the repository of Kubernetes v1.35, "
            "but k8s_node_kubernetes_version is 1.34.1-1.1 (v1.34): each repository carries one minor version. Fix: "
            "k8s_node_repo_url and k8s_node_key_url with /core:/stable:/v1.34/deb",
        ],
    ),
    "version_not_exact": (
        {**VAULT, "k8s_node_kubernetes_version": "1.35"},
        ['k8s_node_kubernetes_version is "1.35", not an exact package version'],
    ),
    "label_key_with_invalid_characters": (
        {**VAULT, "k8s_node_labels": {"example.com/gpu pool": "training"}},
        [
            "k8s_node_labels has 'example.com/gpu pool': 'training', not a valid Kubernetes label: its name "
            "'gpu pool' must be at most 63 characters, alphanumeric at both ends, with only '-', '_', '.' and "
            "alphanumerics inside. Fix: e.g. example.com/pool: training",
        ],
    ),
    "label_value_with_invalid_characters": (
        {**VAULT, "k8s_node_labels": {"example.com/pool": "training/a100"}},
        ["k8s_node_labels has 'example.com/pool': 'training/a100', not a valid Kubernetes label: a value must be"],
    ),
    "label_prefix_upper_case": (
        {**VAULT, "k8s_node_labels": {"Example.com/pool": "training"}},
        ["its prefix 'Example.com' is not a DNS subdomain"],
    ),
    "taint_effect_unknown": (
        {**VAULT, "k8s_node_taints": [{"key": "nvidia.com/gpu", "effect": "NoRun"}]},
        ["each taint needs key and an effect of NoSchedule, PreferNoSchedule, NoExecute"],
    ),
    "control_plane_host_not_in_the_inventory": (
        {"k8s_node_control_plane_host": "cp-01", "k8s_node_control_plane_version": "v1.35.9"},
        ['k8s_node_control_plane_host is "cp-01", not an inventory host: the role runs kubeadm token create there.'],
    ),
    "every_problem_at_once": (
        {
            **VAULT,
            "k8s_node_ca_cert_hash": "sha256:5538F945",
            "k8s_node_labels": {"example.com/gpu pool": "training"},
            "k8s_node_control_plane_host": "cp-01",
            "k8s_node_control_plane_version": "v1.34.8",
        },
        [
            'k8s_node_ca_cert_hash is "sha256:5538F945", not "sha256:" and the 64 lower-case hex digits of the '
            "SHA-256 of the cluster CA's public key.",
            "k8s_node_labels has 'example.com/gpu pool': 'training', not a valid Kubernetes label:",
            "k8s_node_kubernetes_version is 1.35.9-1.1 (v1.35.9), newer than the control plane's v1.34.8 "
            "(k8s_node_control_plane_version)",
            'k8s_node_control_plane_host is "cp-01", not an inventory host: the role runs kubeadm token create there.',
        ],
    ),
    "kubeconfig_missing_on_the_controller": (
        {**VAULT, "k8s_node_kubeconfig": "/nonexistent/admin.conf"},
        [
            'k8s_node_kubeconfig is "/nonexistent/admin.conf", which is not a file on the controller: the role '
            "reaches the Kubernetes API (the Node, its labels, Ready, cordon and drain) from here."
        ],
    ),
}


@pytest.fixture(scope="module")
def case_run(tmp_path_factory) -> CaseRun:
    # Each case's Node name is its own, in the lower case with '-' Kubernetes takes (case names have '_').
    named = {case: {"k8s_node_node_name": case.replace("_", "-"), **v} for case, (v, _expected) in CASES.items()}
    hosts = local_cases(named)
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("cases"), hosts)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_in_preflight(case_run: CaseRun, case: str) -> None:
    variables, expected = CASES[case]
    case_run.assert_fails_with(case, expected)
    # Not even a malformed token is printed, by any case of the run.
    assert variables.get("k8s_node_join_token", "x" * 23)[7:] not in case_run.output


def test_an_api_the_controller_cannot_reach_fails_in_preflight(tmp_path: Path) -> None:
    # A kubeconfig whose API server nothing answers (port 9 of the machine itself: discard, closed here).
    kubeconfig = tmp_path / "admin.conf"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n"
    )
    proc = run_local(PLAYBOOK, TAG, tmp_path, {**VAULT, "k8s_node_kubeconfig": str(kubeconfig),
                                               "k8s_node_control_plane_version": ""})  # fmt: skip
    assert_fails_with(proc, "localhost", [
        f"The Kubernetes API could not be read from the controller with k8s_node_kubeconfig {kubeconfig}:",
        "Fix: a kubeconfig on this machine whose API server it reaches, with the rights to read and patch Nodes",
    ])  # fmt: skip


# Bench nodes posed as other OSes by their os-release (tests/fixtures/os-release), as the other roles' OS cases are.
RELEASE_NODES = {"ubuntu2204": "ubuntu-22.04", "ubuntu2404": "ubuntu-24.04", "rocky9": "rocky-9.3"}
OS_REFUSED = "k8s_node supports Debian 12 and 13 and Ubuntu 22.04 and 24.04;"
# A problem of the node's own, so that the run stops in preflight with the node's whole list of problems.
CA_HASH_PROBLEM = 'k8s_node_ca_cert_hash is "sha256:5538F945", not "sha256:"'


@pytest.fixture(scope="module")
def release_run(tmp_path_factory) -> CaseRun:
    specs = [{"name": name, "image": "debian13"} for name in RELEASE_NODES]
    with bench_nodes(tmp_path_factory, "k8s-preflight", specs) as started:
        for node, release in RELEASE_NODES.items():
            started.os_release(node, release)
        cases = {node: (node, {**VAULT, "k8s_node_ca_cert_hash": "sha256:5538F945"}) for node in RELEASE_NODES}
        yield CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("releases"), node_cases(started.inventory, cases))


@pytest.mark.parametrize("node", ["ubuntu2204", "ubuntu2404"])
def test_ubuntu_nodes_pass_the_os_check(release_run: CaseRun, node: str) -> None:
    """Ubuntu 22.04 and 24.04 (their containerd 1.7 from the archive) are accepted: the node's list of problems holds
    the case's own and not the OS release."""
    release_run.assert_fails_with(node, [CA_HASH_PROBLEM])
    assert OS_REFUSED not in release_run.text(node)


def test_a_node_of_another_os_is_refused_with_its_release(release_run: CaseRun) -> None:
    release_run.assert_fails_with("rocky9", [
        CA_HASH_PROBLEM,
        f"{OS_REFUSED} rocky9 runs Rocky Linux 9.3 (Blue Onyx) (ID=rocky, VERSION_ID=9.3). Fix: a supported "
        "release, or leave this node out of the Kubernetes stage.",
    ])  # fmt: skip
