"""k8s_node's decisions (plugins/module_utils/kubernetes_node.py): the preflight (every problem of a node at once),
variables, skew, kubeadm's join command, labels, the Node patch, Ready, verification.

The join commands are real kubeadm outputs quoted in public threads (tests/fixtures/SOURCES.md); the Node objects
are synthetic, in the API's shape.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from nested import changed

from ansible_collections.gpuops.bringup.plugins.module_utils import kubernetes_node as kn

ROOT = Path(__file__).resolve().parents[4]
HASH = "sha256:44a68d4a2c2a86e05cc0d4ee8c9c6b64352c54e450021331c483561e45b34388"
BASE = {
    "k8s_node_kubernetes_version": "1.31.4-1.1",
    "k8s_node_repo_url": "https://pkgs.k8s.io/core:/stable:/v1.31/deb",
    "k8s_node_join_token": "",
    "k8s_node_control_plane_host": "cp-01",
    "k8s_node_ca_cert_hash": "",
    "k8s_node_api_endpoint": "",
    "k8s_node_control_plane_version": "",
    "k8s_node_labels": {},
    "k8s_node_label_prefix": "gpuops.io",
    "k8s_node_taints": [],
}

# kubernetes/kubernetes#56185 (kubeadm 1.9, the first --print-join-command: endpoint after --token) and
# kubernetes/kubeadm#659 (2018); mbert/kubeadm2ha#18 (a klog line first; the author shortened the hash).
JOIN_1_9 = ("kubeadm join --token 447067.20b55955bd6abe6c 192.168.99.100:8443 --discovery-token-ca-cert-hash "
            "sha256:17023a5c90b996e50c514e63e161e46f78be216fd48c0c3df3be67e008b28889")  # fmt: skip
JOIN_659 = ("kubeadm join --token 5d2dc8.3e93f8449167639b 10.0.2.66:6443 --discovery-token-ca-cert-hash "
            f"{HASH}")  # fmt: skip
JOIN_KLOG = ("I0914 14:11:14.396695   3948 feature_gate.go:230] feature gates: &{map[]}\nkubeadm join 10.1.3.2:6443 "
             "--token aaaaaa.bbbbbbbbbbbbbbbb --discovery-token-ca-cert-hash "
             "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")  # fmt: skip


def test_the_defaults_with_a_control_plane_have_no_problem():
    assert kn.input_problems(BASE) == []


@pytest.mark.parametrize(
    ("url", "minor"),
    [
        ("https://pkgs.k8s.io/core:/stable:/v1.30/deb", "1.30"),
        ("https://pkgs.k8s.io/core:/stable:/v1.32/deb", "1.32"),
        # The minor's digits, not their prefix: 1.3 is not 1.31.
        ("https://pkgs.k8s.io/core:/stable:/v1.3/deb", "1.3"),
        ("http://mirror.example/pkgs.k8s.io/core:/stable:/v2.31/deb", "2.31"),
    ],
)
def test_a_repository_of_another_minor_version_is_named(url, minor):
    """Each of the project's repositories carries one minor version: the package version must be of that one."""
    (problem,) = kn.input_problems({**BASE, "k8s_node_repo_url": url})
    assert problem == (
        f"k8s_node_repo_url is {url}, the repository of Kubernetes v{minor}, but k8s_node_kubernetes_version is "
        "1.31.4-1.1 (v1.31): each repository carries one minor version. Fix: k8s_node_repo_url and k8s_node_key_url "
        "with /core:/stable:/v1.31/deb"
    )


@pytest.mark.parametrize(
    ("version", "refused"),
    [("1.35.9-1.1", False), ("1.35.0-0", False), ("1.36.0-1.1", True), ("1.40.2-1.1", True), ("2.0.0-1.1", True)],
)
def test_a_minor_after_the_last_one_with_containerd_1_is_refused(version, refused):
    """The distribution's containerd is 1.x: a kubelet that needs 2.x is refused before anything changes."""
    major, minor = version.split(".")[:2]
    problems = kn.input_problems(
        {
            **BASE,
            "k8s_node_kubernetes_version": version,
            "k8s_node_repo_url": f"https://pkgs.k8s.io/core:/stable:/v{major}.{minor}/deb",
        }
    )
    assert problems == (
        [
            f"k8s_node_kubernetes_version is {version} (v{major}.{minor}), but Kubernetes after 1.35 needs containerd "
            "2.x, and this role installs the distribution's containerd, 1.x on every release it supports. Fix: a 1.35 "
            'version or older, e.g. k8s_node_kubernetes_version: "1.35.9-1.1" with its repository (k8s_node_repo_url '
            "and k8s_node_key_url of /core:/stable:/v1.35/deb)"
        ]
        if refused
        else []
    )


def test_the_repository_of_the_same_minor_version_is_no_problem_through_a_mirror():
    assert (
        kn.input_problems({**BASE, "k8s_node_repo_url": "http://m.example/pkgs.k8s.io/core:/stable:/v1.31/deb"}) == []
    )


def test_a_vault_token_needs_its_hash_and_endpoint_and_is_never_shown():
    problems = kn.input_problems({**BASE, "k8s_node_control_plane_host": "", "k8s_node_join_token": "Secret.Token"})
    assert any("k8s_node_join_token is not a bootstrap token" in p for p in problems)
    assert any("k8s_node_ca_cert_hash is empty" in p for p in problems)
    assert any("k8s_node_api_endpoint is empty" in p for p in problems)
    assert not any("Secret" in p for p in problems)


@pytest.mark.parametrize(
    ("labels", "why"),
    [
        ({"example.com/gpu pool": "a"}, "its name 'gpu pool'"),
        ({"Example.com/pool": "a"}, "its prefix 'Example.com'"),
        ({"example.com/pool": "-a"}, "a value must be empty"),
        ({"example.com/pool": "x" * 64}, "a value must be empty"),
        ({"example.com/pool": 3}, "label values are strings, got int"),
        ({"/pool": "a"}, "its prefix ''"),
    ],
)
def test_invalid_labels_are_named_with_the_reason(labels, why):
    (problem,) = kn.input_problems({**BASE, "k8s_node_labels": labels})
    assert why in problem


@pytest.mark.parametrize(
    ("version", "control_plane", "expected"),
    [
        ("1.31.4-1.1", "v1.31.4", None),
        ("1.31.4-1.1", "v1.31.0", None),
        ("1.30.8-1.1", "v1.31.4", None),
        ("1.31.4-1.1", "v1.30.8", "newer than the control plane's v1.30.8"),
        ("1.29.9-1.1", "v1.31.4", "2 minor versions older than the control plane's v1.31.4"),
        ("1.31.4-1.1", "v2.0.0", "minor versions older"),
    ],
)
def test_skew(version, control_plane, expected):
    problem = kn.skew_problem(version, control_plane, "the API server")
    assert problem is None if expected is None else expected in problem


@pytest.mark.parametrize("text", [JOIN_1_9, JOIN_659])
def test_join_commands_of_real_kubeadm_output(text):
    parsed = kn.join_command(text)
    assert parsed["problem"] is None
    assert parsed["endpoint"] in ("192.168.99.100:8443", "10.0.2.66:6443")
    assert parsed["token"] in ("447067.20b55955bd6abe6c", "5d2dc8.3e93f8449167639b")


def test_a_shortened_hash_is_a_problem_that_does_not_show_the_token():
    parsed = kn.join_command(JOIN_KLOG)
    assert parsed["endpoint"] == "10.1.3.2:6443"
    assert "is not sha256:<64 hex>" in parsed["problem"]
    assert "aaaaaa." not in parsed["problem"]


def test_no_join_line_is_a_problem():
    assert kn.join_command("error: no kubeconfig")["problem"] == "it printed no `kubeadm join` line"


GPU = {"devices": [{"name": "NVIDIA L40S"}] * 4, "driver_version": "570.172.08", "cuda_version": "12.8",
       "simulated": {"profile": "pcie_l40s_4gpu"}}  # fmt: skip


def test_labels_from_the_gpus_and_the_inventory_with_the_users_winning():
    labels = kn.node_labels(GPU, {"profile": "pcie_l40s_4gpu"}, "r12", "gpuops.io", {"gpuops.io/rack": "row-3"})
    assert labels == {
        "gpuops.io/gpu.product": "NVIDIA-L40S",
        "gpuops.io/gpu.count": "4",
        "gpuops.io/gpu.driver": "570.172.08",
        "gpuops.io/gpu.cuda": "12.8",
        "gpuops.io/gpu.simulated": "true",
        "gpuops.io/rack": "row-3",
        "gpuops.io/hardware-profile": "pcie_l40s_4gpu",
    }


def test_a_node_without_a_driver_gets_no_gpu_labels():
    assert kn.node_labels({}, {"profile": "bench_container"}, "", "gpuops.io", {}) == {
        "gpuops.io/hardware-profile": "bench_container"
    }


def test_the_patch_changes_only_what_differs_and_drops_stale_labels_of_the_prefix():
    node = {"metadata": {"labels": {"gpuops.io/gpu.count": "8", "gpuops.io/gpu.driver": "535.1", "team": "x"}},
            "spec": {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]}}  # fmt: skip
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    patch = kn.node_patch(node, {"gpuops.io/gpu.count": "8", "gpuops.io/rack": "r1"}, [taint], "gpuops.io")
    assert patch == {
        "metadata": {"labels": {"gpuops.io/rack": "r1", "gpuops.io/gpu.driver": None}},
        "spec": {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}, taint]},
    }
    node["metadata"]["labels"] = {"gpuops.io/gpu.count": "8", "gpuops.io/rack": "r1"}
    node["spec"]["taints"].append(taint)
    assert kn.node_patch(node, {"gpuops.io/gpu.count": "8", "gpuops.io/rack": "r1"}, [taint], "gpuops.io") == {}


def test_ready_and_why_not():
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    not_ready = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                            "message": "container runtime network not ready"}]}}  # fmt: skip
    assert kn.ready(ready) is True
    assert kn.ready(not_ready) is False
    assert kn.ready(not_ready, "reason") == "Ready is False (KubeletNotReady: container runtime network not ready)"
    assert "no Ready condition" in kn.ready({}, "reason")


DUMP = """version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.gpuops.test/pause:3.10"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
"""


def read(held="kubeadm\nkubelet\nkubectl", units="containerd enabled active\nkubelet enabled active"):
    return (f"== packages\nkubeadm 1.31.4-1.1\nkubelet 1.31.4-1.1\nkubectl 1.31.4-1.1\n== held\n{held}\n"
            f"== units\n{units}\n== ctr\nanswers\n== files\n/etc/kubernetes/kubelet.conf\n"
            f"== config\n{DUMP}")  # fmt: skip


NODE = {"metadata": {"labels": {}}, "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "nodeInfo": {"kubeletVersion": "v1.31.4"}}}  # fmt: skip
ARGS = ("1.31.4-1.1", ["kubeadm", "kubelet", "kubectl"], "registry.gpuops.test/pause:3.10")


def test_verification_of_a_good_node():
    assert kn.verify_problems(read(), NODE, *ARGS, False, {}, [], "gpuops.io") == []


def test_verification_names_each_problem():
    problems = kn.verify_problems(read(held="kubeadm", units="kubelet enabled failed"), NODE, *ARGS, True,
                                  {"gpuops.io/rack": "r1"}, [], "gpuops.io")  # fmt: skip
    assert problems == [
        "kubelet is not held",
        "kubectl is not held",
        "kubelet.service is enabled and failed, not enabled and active",
        "containerd has no nvidia runtime (k8s_node_nvidia_runtime is true: run the container toolkit stage)",
        "the Node's labels or taints differ from the role's: {'metadata': {'labels': {'gpuops.io/rack': 'r1'}}}",
    ]


SETTINGS = {"version": "1.31.4-1.1", "packages": ["kubeadm", "kubelet", "kubectl"],
            "sandbox_image": "registry.gpuops.test/pause:3.10", "nvidia": False, "labels": {}, "taints": [],
            "prefix": "gpuops.io", "node_name": "n1"}  # fmt: skip
SIMULATED = {"simulated": {"profile": "pcie_l40s_4gpu"}}


@pytest.mark.parametrize(
    ("changes", "passed"),
    [
        ({}, "containerd active (systemd cgroups, sandbox registry.gpuops.test/pause:3.10); Node n1 Ready (kubelet "
             "v1.31.4) with 0 labels"),
        ({"own_kernel": False, "gpu": SIMULATED},
         "containerd active (systemd cgroups, sandbox registry.gpuops.test/pause:3.10); Node n1 Ready (kubelet "
         "v1.31.4) with 0 labels [GPU labels from SIMULATED pcie_l40s_4gpu] (not applicable in a container, whose "
         "kernel belongs to its host: kernel modules, sysctls, swap)"),
        ({"settings": {**SETTINGS, "taints": [{"key": "a", "effect": "NoSchedule"}] * 2},
          "node": {**NODE, "spec": {"taints": [{"key": "a", "value": "", "effect": "NoSchedule"}] * 2}}},
         "containerd active (systemd cgroups, sandbox registry.gpuops.test/pause:3.10); Node n1 Ready (kubelet "
         "v1.31.4) with 0 labels and 2 taints"),
        ({"gpu": {"simulated": None}, "node": {**NODE, "status": {**NODE["status"], "nodeInfo": {}}}},
         "containerd active (systemd cgroups, sandbox registry.gpuops.test/pause:3.10); Node n1 Ready (kubelet ?) "
         "with 0 labels"),
    ],
    ids=["own_kernel", "container_simulated_gpu", "taints", "kubelet_version_unknown"],
)  # fmt: skip
def test_the_passed_line(changes, passed):
    """The lines the role's Jinja verdict rendered for the same inputs (ansible-core 2.19) before it moved here."""
    given = {"read": read(), "node": NODE, "settings": SETTINGS, "gpu": {}, "own_kernel": True, **changes}
    found = kn.verify(host="n1", **given)
    assert found["passed"] == f"n1 passed k8s_node verification: kubeadm, kubelet, kubectl held at 1.31.4-1.1; {passed}"
    unknown = ["the Node reports kubelet of no version, not v1.31.4"]
    assert found["failures"] == (unknown if not given["node"]["status"]["nodeInfo"] else [])


def test_the_verdict_names_each_problem_and_the_nvidia_runtime_in_its_passed_line():
    found = kn.verify(host="n1", read=read(held="kubeadm"), node=NODE, settings={**SETTINGS, "nvidia": True}, gpu={},
                      own_kernel=True)  # fmt: skip
    assert found["failures"] == [
        "kubelet is not held",
        "kubectl is not held",
        "containerd has no nvidia runtime (k8s_node_nvidia_runtime is true: run the container toolkit stage)",
    ]
    assert "(systemd cgroups, sandbox registry.gpuops.test/pause:3.10, nvidia runtime);" in found["passed"]


def _pod(name, phase="Running", owner="ReplicaSet", annotations=None):
    return {
        "metadata": {"name": name, "namespace": "ns", "annotations": annotations or {},
                     "ownerReferences": [{"kind": owner}] if owner else []},
        "status": {"phase": phase},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("pods", "left"),
    [
        ([], []),
        (None, []),
        ([_pod("a"), _pod("b", owner=None)], ["ns/a", "ns/b"]),
        ([_pod("ds", owner="DaemonSet")], []),
        ([_pod("done", phase="Succeeded"), _pod("oom", phase="Failed")], []),
        ([_pod("static", owner=None, annotations={"kubernetes.io/config.mirror": "x"})], []),
        # Being deleted: it runs until it is gone, and it still holds the GPU.
        ([{**_pod("going"), "metadata": {**_pod("going")["metadata"], "deletionTimestamp": "2026-12-04T00:00:00Z"}}],
         ["ns/going"]),
    ],
)  # fmt: skip
def test_drain_leftovers(pods, left):
    assert kn.drain_leftovers(pods) == left


class _Stat:
    def __init__(self, mode, uid=1000):
        self.st_mode, self.st_uid = 0o100000 | mode, uid


@pytest.mark.parametrize(
    ("path", "stat", "error", "warnings"),
    [
        ("", None, None, []),
        ("/srv/admin.conf", _Stat(0o600), None, []),
        ("/nonexistent/admin.conf", None, 'k8s_node_kubeconfig is "/nonexistent/admin.conf", which is not a file', []),
        ("/srv/admin.conf", _Stat(0o644), None,
         ["k8s_node_kubeconfig (/srv/admin.conf) is mode 0644: its credentials to the cluster are open to others on "
          "the controller. Fix: chmod 600 it"]),
        ("/srv/admin.conf", _Stat(0o640), None, ["is mode 0640: its credentials to the cluster are open to its group"]),
        ("", _Stat(0o600, uid=0), None, ["k8s_node_kubeconfig (the client's default kubeconfig) belongs to uid 0"]),
    ],
)  # fmt: skip
def test_kubeconfig_findings(path, stat, error, warnings):
    found_error, found_warnings = kn.kubeconfig_findings("k8s_node_kubeconfig", path, stat, 1000)
    assert (found_error is None) == (error is None) and (error is None or found_error.startswith(error))
    assert len(found_warnings) == len(warnings)
    assert all(w in f for w, f in zip(warnings, found_warnings, strict=True))


# --- preflight: every problem of a node at once --------------------------------------------------------------------

# os_facts' gpuops_os of a Debian 13 node running its own kernel, as stage 1 leaves it for kubelet.
GPUOPS_OS = {
    "os": {"id": "debian", "major": "13", "version_id": "13", "name": "Debian GNU/Linux"},
    "capabilities": {"own_kernel": True},
    "kernel_modules": {"overlay": "loaded", "br_netfilter": "loaded"},
    "sysctl": {"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1",
               "net.bridge.bridge-nf-call-ip6tables": "1"},
    "swap": {"active": [], "fstab": []},
}  # fmt: skip
# The role's defaults and a control plane in the inventory.
VARIABLES = {
    **BASE,
    "k8s_node_kubernetes_version": "1.35.9-1.1",
    "k8s_node_repo_url": "https://pkgs.k8s.io/core:/stable:/v1.35/deb",
    "k8s_node_key_url": "https://pkgs.k8s.io/core:/stable:/v1.35/deb/Release.key",
    "k8s_node_key_fingerprint": "DE15B14486CD377B9E876E1A234654DA9A296436",
    "k8s_node_key_sha256": "",
    "k8s_node_kubeconfig": "/srv/admin.conf",
    "gpuops_kubernetes_join": True,
}
# roles/k8s_node/vars/main.yml's tables.
TABLES = {
    "supported": {"debian": ["12", "13"], "ubuntu": ["22", "24"]},
    "kernel_modules": ["overlay", "br_netfilter"],
    "sysctl": {"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1",
               "net.bridge.bridge-nf-call-ip6tables": "1"},
}  # fmt: skip
READS = {"inventory_hosts": ["cp-01", "n1"], "kubeconfig_problem": None, "control_plane": {"version": "v1.35.9"}}

SKEW_NEWER = (
    "k8s_node_kubernetes_version is 1.35.9-1.1 (v1.35.9), newer than the control plane's v1.34.8 ({where}): a "
    "kubelet must not be newer than the API server. Fix: k8s_node_kubernetes_version of v1.34 (and its repository), "
    "or upgrade the control plane first."
)
CP_HOST = (
    'k8s_node_control_plane_host is "cp-02", not an inventory host: the role runs kubeadm token create there. Fix: '
    "the inventory name of a control-plane host (with kubeadm and /etc/kubernetes/admin.conf)."
)
KUBECONFIG = (
    'k8s_node_kubeconfig is "/srv/admin.conf", which is not a file on the controller: the role reaches the '
    "Kubernetes API (the Node, its labels, Ready, cordon and drain) from here. Fix: the path of the cluster's "
    "kubeconfig on this machine"
)
API = (
    "The Kubernetes API could not be read from the controller with k8s_node_kubeconfig /srv/admin.conf: {error}. "
    "Fix: a kubeconfig on this machine whose API server it reaches, with the rights to read and patch Nodes (the "
    "control plane's admin.conf)."
)
REPOSITORY = (
    "The Kubernetes repository's key_fingerprint 'DE15' is not an OpenPGP fingerprint (40 hex digits, or 64 for a v6 "
    "key); gpg --show-keys on the key from https://pkgs.k8s.io/core:/stable:/v1.35/deb/Release.key prints it. Fix: "
    "the fingerprint the Kubernetes project publishes in k8s_node_key_fingerprint (the role's default), and "
    'k8s_node_key_sha256 the sha256sum of the key file, or "".'
)
OS = (
    "k8s_node supports Debian 12 and 13 and Ubuntu 22.04 and 24.04; n1 runs Rocky Linux (ID=rocky, VERSION_ID=9.4). "
    "Fix: a supported release, or leave this node out of the Kubernetes stage."
)
STAGE_1_FIX = (
    "Fix: run stage 1 (playbooks/os_baseline.yml) with gpuops_kubernetes_join: true, which loads the modules at boot, "
    "sets the sysctls and turns swap off"
)


def gpuops_os(**changes):
    """GPUOPS_OS with changes: os__id="rocky" sets GPUOPS_OS["os"]["id"]."""
    return changed(GPUOPS_OS, **changes)


def preflight(state=None, reads=None, **variables):
    return kn.preflight(
        host="n1", node=GPUOPS_OS if state is None else state, variables={**VARIABLES, **variables}, **TABLES,
        **{**READS, **(reads or {})},
    )["problems"]  # fmt: skip


def test_a_node_as_stage_1_leaves_it_with_good_variables_has_no_problem():
    assert preflight() == []
    # The version given instead of read, and a node given its token from the vault.
    assert preflight(reads={"control_plane": None}, k8s_node_control_plane_version="v1.35.9") == []
    assert preflight(k8s_node_control_plane_host="", k8s_node_join_token="abcdef.0123456789abcdef",
                     k8s_node_ca_cert_hash=HASH, k8s_node_api_endpoint="cp.example:6443") == []  # fmt: skip


def test_every_problem_at_once_each_a_sentence_with_its_fix():
    state = gpuops_os(os__id="rocky", os__major="9", os__version_id="9.4", os__name="Rocky Linux",
                      kernel_modules__br_netfilter="absent", swap__active=[{"device": "/swap.img"}])  # fmt: skip
    problems = preflight(
        state, {"kubeconfig_problem": KUBECONFIG, "control_plane": {"version": "v1.34.8"}},
        k8s_node_ca_cert_hash="sha256:5538F945", k8s_node_labels={"example.com/gpu pool": "training"},
        k8s_node_control_plane_host="cp-02", k8s_node_key_fingerprint="DE15", gpuops_kubernetes_join=False,
    )  # fmt: skip
    assert problems == [
        'k8s_node_ca_cert_hash is "sha256:5538F945", not "sha256:" and the 64 lower-case hex digits of the SHA-256 of '
        "the cluster CA's public key. Fix: the --discovery-token-ca-cert-hash value kubeadm prints, or openssl x509 "
        "-pubkey -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | sha256sum.",
        "k8s_node_labels has 'example.com/gpu pool': 'training', not a valid Kubernetes label: its name 'gpu pool' "
        "must be at most 63 characters, alphanumeric at both ends, with only '-', '_', '.' and alphanumerics inside. "
        "Fix: e.g. example.com/pool: training.",
        SKEW_NEWER.format(where="the API server"),
        CP_HOST,
        KUBECONFIG + ".",
        REPOSITORY,
        OS,
        "n1 is not ready for kubelet: gpuops_kubernetes_join is false; br_netfilter is not loaded; swap is on "
        f"(/swap.img). {STAGE_1_FIX} (gpuops_kubernetes_join is false now).",
    ]


def test_the_skew_names_where_the_control_planes_version_came_from():
    # Given, it is the one compared, whatever the API says.
    given = preflight(k8s_node_control_plane_version="v1.34.8")
    assert given == [SKEW_NEWER.format(where="k8s_node_control_plane_version")]
    assert preflight(reads={"control_plane": {"version": "v1.34.8"}}) == [SKEW_NEWER.format(where="the API server")]


@pytest.mark.parametrize(
    ("control_plane", "skewed"),
    [("v1.35.0", False), ("v1.36.2", False), ("v1.37.0", True), ("v1.34.9", True), ("v2.35.0", True)],
)
def test_the_skew_boundaries_against_the_api_servers_version(control_plane, skewed):
    """A kubelet of the control plane's minor or one older joins; a newer one, or two minors older, does not."""
    problems = preflight(reads={"control_plane": {"version": control_plane}})
    assert bool(problems) is skewed
    assert all(f"the control plane's {control_plane} (the API server)" in p for p in problems)


@pytest.mark.parametrize(
    "variables",
    [
        {"k8s_node_kubernetes_version": "1.35"},
        {"k8s_node_kubernetes_version": 1.35},
        {"k8s_node_control_plane_version": "1.34"},
    ],
)
def test_a_version_input_problems_refuses_is_not_compared_too(variables):
    (problem,) = preflight(reads={"control_plane": {"version": "v1.34.8"}}, **variables)
    assert problem.startswith(f"{next(iter(variables))} is ")
    assert "newer than" not in problem and "cannot compare" not in problem


def test_an_api_that_could_not_be_read_is_a_problem_with_the_clients_error():
    error = "Could not create API client: Invalid kube-config file. No configuration found."
    # The client's full stop is not doubled.
    assert preflight(reads={"control_plane": {"version": None, "error": error}}) == [API.format(error=error[:-1])]
    (problem,) = preflight(reads={"control_plane": {"version": None, "error": error}}, k8s_node_kubeconfig="")
    assert problem.startswith(
        "The Kubernetes API could not be read from the controller with the client default kubeconfig "
        "(k8s_node_kubeconfig is empty): Could not create API client"
    )


def test_a_long_api_error_is_cut_at_a_word():
    (problem,) = preflight(reads={"control_plane": {"version": None, "error": "word " * 200}})
    shown = problem.split("/srv/admin.conf: ", 1)[1].split(". Fix:", 1)[0]
    assert len(shown) <= kn.API_ERROR_CHARS and shown.endswith("word...")
    (problem,) = preflight(reads={"control_plane": {"version": None, "error": "x" * kn.API_ERROR_CHARS}})
    assert "x" * kn.API_ERROR_CHARS + ". Fix:" in problem


def test_an_api_not_read_is_no_problem_of_its_own():
    """Not read: the version is given, or the kubeconfig is not there (its problem stands for both)."""
    assert preflight(reads={"control_plane": None, "kubeconfig_problem": KUBECONFIG}) == [KUBECONFIG + "."]


@pytest.mark.parametrize(("host", "listed"), [("cp-01", True), ("cp-02", False), ("", True), ("CP-01", False)])
def test_the_control_plane_host_must_be_an_inventory_host(host, listed):
    problems = preflight(k8s_node_control_plane_host=host, **({} if host else {
        "k8s_node_join_token": "abcdef.0123456789abcdef", "k8s_node_ca_cert_hash": HASH,
        "k8s_node_api_endpoint": "cp.example:6443"}))  # fmt: skip
    assert (problems == []) is listed
    assert listed or problems == [CP_HOST.replace("cp-02", host)]


def test_the_repository_key_pin():
    assert preflight(k8s_node_key_fingerprint="DE15") == [REPOSITORY]
    (problem,) = preflight(k8s_node_key_fingerprint="", k8s_node_key_sha256="")
    assert problem.startswith(
        "The Kubernetes repository's key_url https://pkgs.k8s.io/core:/stable:/v1.35/deb/Release.key needs its pin"
    )
    # The sha256 alone pins it too.
    assert preflight(k8s_node_key_fingerprint="", k8s_node_key_sha256="a" * 64) == []


@pytest.mark.parametrize(
    ("os_id", "major", "supported"),
    [("debian", "12", True), ("debian", "13", True), ("debian", "11", False), ("ubuntu", "22", True),
     ("ubuntu", "24", True), ("ubuntu", "20", False), ("rocky", "9", False), (None, None, False)],
)  # fmt: skip
def test_the_supported_releases(os_id, major, supported):
    problems = preflight(gpuops_os(os__id=os_id, os__major=major))
    assert (problems == []) is supported


def test_an_unknown_os_is_named_so():
    (problem,) = preflight(gpuops_os(os={}))
    assert problem.startswith(
        "k8s_node supports Debian 12 and 13 and Ubuntu 22.04 and 24.04; n1 runs an unknown OS (ID=None, "
        "VERSION_ID=None)."
    )


def test_the_supported_releases_in_words_are_the_roles_table():
    """SUPPORTED_TEXT names vars/main.yml's __k8s_node_supported: a release added there needs its words here."""
    table = yaml.safe_load((ROOT / "roles" / "k8s_node" / "vars" / "main.yml").read_text())["__k8s_node_supported"]
    assert table == TABLES["supported"] == {"debian": ["12", "13"], "ubuntu": ["22", "24"]}


@pytest.mark.parametrize(
    ("changes", "missing"),
    [
        ({"kernel_modules__overlay": "absent"}, "overlay is not loaded"),
        # Built into the kernel is as good as loaded.
        ({"kernel_modules__overlay": "builtin"}, None),
        ({"sysctl__net.ipv4.ip_forward": "0"}, "net.ipv4.ip_forward is 0, not 1"),
        # br_netfilter's keys do not exist while it is not loaded.
        ({"sysctl__net.bridge.bridge-nf-call-iptables": None}, "net.bridge.bridge-nf-call-iptables is unset, not 1"),
        ({"swap__active": [{"device": "/dev/sda2"}, {"device": "/swapfile"}]}, "swap is on (/dev/sda2, /swapfile)"),
        # Swap listed in fstab but off is stage 1's to keep off, not kubelet's problem.
        ({"swap__fstab": ["/dev/sda2 none swap sw 0 0"]}, None),
    ],
)
def test_what_stage_1_prepares_for_kubelet_one_at_a_time(changes, missing):
    problems = preflight(gpuops_os(**changes))
    expected = f"n1 is not ready for kubelet: {missing}. {STAGE_1_FIX}."
    assert problems == ([expected] if missing else [])


def test_a_container_is_not_read_for_kubelet_but_the_join_setting_still_is():
    """A container's kernel, modules and swap are its host's (verify says so); gpuops_kubernetes_join is the node's."""
    state = gpuops_os(capabilities__own_kernel=False, kernel_modules__overlay="absent", swap__active=[{"device": "/x"}])
    assert preflight(state) == []
    assert preflight(state, gpuops_kubernetes_join=False) == [
        f"n1 is not ready for kubelet: gpuops_kubernetes_join is false. {STAGE_1_FIX} (gpuops_kubernetes_join is false "
        "now)."
    ]
