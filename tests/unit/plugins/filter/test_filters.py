"""The collection's filters, as Jinja calls them (through FilterModule)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import acceptance, gpu, kernel, packages, sources
from ansible_collections.gpuops.bringup.plugins.module_utils.osinfo import normalize_sysctl

FILTER_DIR = Path(kernel.__file__).parent
SOURCES = sources.FilterModule().filters()
KERNEL = kernel.FilterModule().filters()
GPU = gpu.FilterModule().filters()
PACKAGES = packages.FilterModule().filters()
SYS = Path(__file__).resolve().parents[3] / "fixtures" / "os" / "debian12" / "root" / "proc" / "sys"


def test_every_filter_has_its_documentation():
    every = {}
    for path in FILTER_DIR.glob("*.py"):
        plugin = importlib.import_module(f"ansible_collections.gpuops.bringup.plugins.filter.{path.stem}")
        every.update(plugin.FilterModule().filters())
    assert {**SOURCES, **KERNEL, **GPU, **PACKAGES, **acceptance.FilterModule().filters()}.keys() <= every.keys()
    assert sorted(every) == sorted(p.stem for p in FILTER_DIR.glob("*.yml"))


@pytest.mark.parametrize(
    ("mirror", "problem"),
    [
        # Empty is the documented way to use upstream sources.
        ("", ""),
        ("http://gpuops-mirror:8080", ""),
        ("ftp://m", "it must be an http://, https:// or file:// URL with no spaces, query or fragment"),
        ("http://:8080", "it names no host"),
        # An unset inventory variable.
        (None, "it must be a string URL, not NoneType"),
    ],
)
def test_mirror_url_problem(mirror, problem):
    assert SOURCES["mirror_url_problem"](mirror) == problem


@pytest.mark.parametrize(
    ("url", "mirror", "mirrored"),
    [
        (
            "http://deb.debian.org/debian",
            "http://mirror.example:8080",
            "http://mirror.example:8080/deb.debian.org/debian",
        ),
        ("http://deb.debian.org/debian", "", "http://deb.debian.org/debian"),
    ],
)
def test_mirrored(url, mirror, mirrored):
    assert SOURCES["mirrored"](url, mirror) == mirrored


def test_mirrored_relative_url_is_a_filter_error():
    with pytest.raises(
        AnsibleFilterError, match=r"^gpuops.bringup.mirrored: 'debian' is not an absolute URL: it must be an http://"
    ):
        SOURCES["mirrored"]("debian", "http://m")


GOOD = {
    "name": "cuda",
    "uris": ["https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"],
    "suites": ["/"],
    "key_url": "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub",
    "key_sha256": "0" * 64,
}


@pytest.mark.parametrize(
    ("repos", "kind", "problems"),
    [
        ([], "apt", []),
        ([GOOD], "apt", []),
        (
            [GOOD, {**GOOD, "name": "cuda 12"}, {**GOOD, "suites": []}],
            "apt",
            [
                "[1] name 'cuda 12' must be letters, digits, '.', '_' or '-' (it names the source and key files)",
                "[2] suites is required for apt, e.g. [stable], or [/] for a flat repository",
            ],
        ),
        # dnf has no suites.
        ([{**GOOD, "suites": []}], "dnf", []),
        (GOOD, "apt", ["must be a list of repositories, got dict"]),
        (None, "apt", ["must be a list of repositories, got NoneType"]),
    ],
)
def test_repository_problems(repos, kind, problems):
    assert SOURCES["repository_problems"](repos, kind) == problems


def test_repository_key_problem_is_empty_for_the_pinned_key():
    index = {"key_url": "http://m/k.pub", "key_fingerprints": ["ABCD"], "key_sha256": "aa11", "key_problem": None}
    assert SOURCES["repository_key_problem"](index, "n1", "p", "abcd", "", "fix.") == ""
    assert SOURCES["repository_key_problem"](index, "n1", "p", "EEEE", "", "fix.").startswith("n1: the signing key")
    with pytest.raises(AnsibleFilterError, match="repository_key_problem needs repository_index's result"):
        SOURCES["repository_key_problem"]([], "n1", "p", "ABCD", "", "fix.")


# What os_facts read on the bench's Debian 12 node.
LIVE = {
    "net.ipv4.ip_forward": normalize_sysctl((SYS / "net/ipv4/ip_forward").read_text()),
    "net.ipv4.tcp_rmem": normalize_sysctl((SYS / "net/ipv4/tcp_rmem").read_text()),
    "vm.swappiness": normalize_sysctl((SYS / "vm/swappiness").read_text()),
    "net.bridge.bridge-nf-call-ip6tables": None,
}


@pytest.mark.parametrize(
    ("desired", "drifted"),
    [
        ({"net.ipv4.ip_forward": 1, "net.ipv4.tcp_rmem": "4096 131072 33554432", "vm.swappiness": "60"}, []),
        # Tabs or spaces, the same value.
        ({"net.ipv4.tcp_rmem": "4096\t131072   33554432"}, []),
        ({"vm.swappiness": 10, "net.ipv4.ip_forward": 1}, ["vm.swappiness"]),
        # A key the kernel does not have, or os_facts was not asked for, counts as drifted.
        (
            {"net.bridge.bridge-nf-call-ip6tables": 1, "kernel.numa_balancing": 0},
            [
                "kernel.numa_balancing",
                "net.bridge.bridge-nf-call-ip6tables",
            ],
        ),
        ({}, []),
    ],
)
def test_sysctl_drift(desired, drifted):
    assert KERNEL["sysctl_drift"](desired, LIVE) == drifted


@pytest.mark.parametrize(("desired", "live"), [(["vm.swappiness"], LIVE), ({"vm.swappiness": 1}, None)])
def test_sysctl_drift_needs_two_mappings(desired, live):
    with pytest.raises(AnsibleFilterError, match="expects two mappings"):
        KERNEL["sysctl_drift"](desired, live)


SETTINGS = {
    "files": {name: f"/etc/{name}" for name in ("nouveau", "grub", "modules", "sysctl", "limits", "systemd", "chrony")},
    "blacklist_nouveau": False, "kernel_cmdline": [], "modules": [], "sysctl": {}, "memlock_unlimited": False,
    "chrony": None, "disable_swap": False, "kernel_hold": False, "chrony_service": "chrony.service",
}  # fmt: skip


def test_the_os_baseline_decisions_through_their_filters():
    node = {"boot": {"loader": "none"}, "capabilities": {}}
    files = SETTINGS["files"]
    assert [(e["path"], e["state"]) for e in KERNEL["os_baseline_paths"](node, SETTINGS)] == [
        ("/etc/nouveau", "absent"), ("/etc/modules", "file"), ("/etc/sysctl", "file"), ("/etc/limits", "absent"),
        ("/etc/systemd", "absent"),
    ]  # fmt: skip
    assert KERNEL["os_baseline_steps"](node, SETTINGS, {files["systemd"]: ["absent"]})["reexec"] is True
    assert KERNEL["os_baseline_verify_problems"](node, SETTINGS) == {
        "failures": [],
        "not_applicable": ["kernel command line", "loaded modules", "swap state", "live sysctls", "chrony running",
                           "service memlock limit"],
    }  # fmt: skip


@pytest.mark.parametrize("name", ["os_baseline_paths", "os_baseline_verify_problems"])
def test_the_os_baseline_filters_name_a_missing_setting(name):
    with pytest.raises(AnsibleFilterError, match=f"gpuops.bringup.{name} needs the role's settings with chrony$"):
        KERNEL[name]({}, {k: v for k, v in SETTINGS.items() if k != "chrony"})
    with pytest.raises(AnsibleFilterError, match=f"gpuops.bringup.{name} needs os_facts' gpuops_os"):
        KERNEL[name](None, SETTINGS)


def test_the_os_baseline_steps_need_managed_paths_changes():
    with pytest.raises(AnsibleFilterError, match="needs managed_paths' changed_paths"):
        KERNEL["os_baseline_steps"]({}, SETTINGS, None)


class TaggedStr(str):
    """Stands in for the tagged str subclass Ansible hands a filter from a template."""


def test_apt_pending_through_jinja_types():
    read = {
        "kubeadm": {"installed": "1.31.4-1.1", "held": True, "broken": False},
        "kubelet": {"installed": "1.31.3-1.1", "held": True, "broken": False},
    }
    left = PACKAGES["apt_pending"]([TaggedStr("kubeadm=1.31.4-1.1"), TaggedStr("kubelet=1.31.4-1.1")], read)
    assert left == ["kubelet=1.31.4-1.1"]
    assert not isinstance(left[0], TaggedStr)


@pytest.mark.parametrize(
    ("specs", "read", "message"),
    [
        # The apt module takes a single name too; a string here would be read a character at a time.
        ("containerd", {}, "gpuops.bringup.apt_pending needs the apt module's names (a list), got str"),
        # An unset variable.
        (["containerd"], None, "gpuops.bringup.apt_pending needs package_info's packages (a mapping), got NoneType"),
    ],
)
def test_apt_pending_names_a_wrong_argument(specs, read, message):
    with pytest.raises(AnsibleFilterError, match=rf"^{re.escape(message)}$"):
        PACKAGES["apt_pending"](specs, read)


@pytest.mark.parametrize(
    ("read", "left"),
    [
        # package_info's packages: held only where installed and held.
        ({"a": {"installed": "1", "held": True}, "b": {"installed": "1", "held": False}}, ["b", "c"]),
        ({"a": {"held": True}, "b": {"held": True}, "c": {"held": True}}, []),
        ({"a": None}, ["a", "b", "c"]),
        ({}, ["a", "b", "c"]),
        # os_facts' packages.held: the held names.
        (["c", "a"], ["b"]),
        ([], ["a", "b", "c"]),
    ],
)
def test_package_unheld_keeps_what_a_hold_task_would_change(read, left):
    unheld = PACKAGES["package_unheld"]([TaggedStr("a"), "b", "c"], read)
    assert unheld == left
    assert not any(isinstance(name, TaggedStr) for name in unheld)


@pytest.mark.parametrize(
    ("names", "read", "message"),
    [
        ("a", {}, "gpuops.bringup.package_unheld needs package names (a list), got str"),
        (["a"], None, "gpuops.bringup.package_unheld needs package_info's packages (a mapping) or os_facts' "
                      "packages.held (a list), got NoneType"),
    ],
)  # fmt: skip
def test_package_unheld_names_a_wrong_argument(names, read, message):
    with pytest.raises(AnsibleFilterError, match=rf"^{re.escape(message)}$"):
        PACKAGES["package_unheld"](names, read)


def test_the_pair_nodes_and_members_from_hostvars():
    """nccl_tests_pairs as a boolean or as a string from the command line; each member's rack, address and gate."""
    from ansible_collections.gpuops.bringup.plugins.filter import nccl_tests

    filters = nccl_tests.FilterModule().filters()
    h100 = {"profile": "hgx_h100_8gpu", "gpu": {"model": "NVIDIA H100 80GB HBM3", "count": 8}}
    own = {**h100, "profile": "site", "gates": {"nccl_pair_busbw_gbps": 150}}
    member = filters["nccl_tests_pair_member"]
    hostvars = {
        "a": {"__nccl_tests_pair_member": member("a", True, ["rack_b", "rack_a"], "10.0.0.1", h100)},
        "b": {"__nccl_tests_pair_member": member("b", "true", ["rack_a"], "b", own)},
        "c": {"__nccl_tests_pair_member": member("c", "no", ["rack_a"], "c", h100)},
        "d": {},
    }
    assert [m["node"] for m in filters["nccl_tests_pair_members"](["a", "b", "c", "d"], hostvars)] == ["a", "b"]
    assert filters["nccl_tests_pair_members"](["d", "b", "a"], hostvars) == [
        {"node": "b", "rack": "rack_a", "address": "b", "gpus": 8, "gate_gbps": 150, "profile": "site"},
        {"node": "a", "rack": "rack_a", "address": "10.0.0.1", "gpus": 8, "gate_gbps": 365, "profile": "hgx_h100_8gpu"},
    ]
    record = {"inputs": {}, "measurement": {"members": [], "entries": []}}
    assert filters["nccl_tests_pair_report"]("a", record) is None
    assert filters["nccl_tests_pair_report"]("a", {}) is None


def test_the_bandwidth_members_from_each_nodes_own_view():
    """Each node makes its member from its own variables (a gpuops_hardware from play variables counts); the run's
    members are those facts, in play order."""
    filters = acceptance.FilterModule().filters()
    member = filters["acceptance_bandwidth_member"]
    h100 = {"profile": "site", "gpu": {"model": "NVIDIA H100 80GB HBM3", "count": 8},
            "infiniband": {"ports": 8, "rate_gbps": 400, "link_layer": "InfiniBand"}}  # fmt: skip
    roce = {**h100, "infiniband": {**h100["infiniband"], "link_layer": "Ethernet"}}
    read = {"evidence": {}}
    expected = {"node": "a", "rack": "rack_a", "fabric": "InfiniBand", "rails": [], "gpus": {}, "gate_gbps": 380,
                "gid_index": None, "problem": None}  # fmt: skip
    assert member("a", read, h100, ["rack_b", "rack_a"]) == expected
    assert member("a", read, {**h100, "gates": {"ib_write_bw_gbps": 300}}, [])["gate_gbps"] == 300
    # A RoCE node takes part too; without the rdma_fabric stage's GID index it has no rails, and says why.
    found = member("b", read, roce, ["rack_a"])
    assert (found["fabric"], found["rails"], found["gid_index"]) == ("Ethernet", [], None)
    assert found["problem"].startswith("no rdma_fabric state (/var/lib/gpuops/rdma_fabric/state.json)")
    assert member("b", read, {**h100, "infiniband": {"ports": 0}}, ["rack_a"]) is None
    assert member("c", {"failed": True}, h100, ["rack_a"]) is None
    hostvars = {"a": {"__acceptance_bw_member": member("a", read, h100, ["rack_a"])}, "b": {}, "c": {
        "__acceptance_bw_member": None}}  # fmt: skip
    assert [m["node"] for m in filters["acceptance_bandwidth_members"](["c", "b", "a"], hostvars)] == ["a"]


def test_node_hosts_needs_the_groups_mapping():
    node_hosts = importlib.import_module("ansible_collections.gpuops.bringup.plugins.filter.inventory").node_hosts
    assert node_hosts({"all": [], "kube_control_plane": []}) == "all:!kube_control_plane"
    with pytest.raises(AnsibleFilterError, match=r"gpuops.bringup.node_hosts needs groups \(a mapping\), got list"):
        node_hosts(["all"])
