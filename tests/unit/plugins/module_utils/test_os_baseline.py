"""The OS baseline's preflight: every problem of a node at once, and the reasons its changes need a reboot."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import os_baseline

# os_facts' gpuops_os of a Debian 12 node that owns its kernel, with GRUB, as the role's defaults leave it.
NODE = {
    "os": {"id": "debian", "major": "12", "version_id": "12", "name": "Debian GNU/Linux", "package_manager": "apt"},
    "kernel": {"cmdline": ["BOOT_IMAGE=/vmlinuz", "ro", "iommu=pt"], "drift": False, "running": "6.1.0-40-amd64",
               "newest": "6.1.0-40-amd64"},
    "capabilities": {"own_kernel": True},
    "boot": {"loader": "grub"},
    "kernel_modules": {"nouveau": "absent"},
}  # fmt: skip
VARIABLES = {
    "os_baseline_disable_swap": True,
    "gpuops_kubernetes_join": True,
    "os_baseline_package_repositories": [],
    "os_baseline_kernel_drift_action": "warn",
    "os_baseline_kernel_cmdline": ["iommu=pt"],
    "os_baseline_blacklist_nouveau": True,
}


def node(**changes):
    state = copy.deepcopy(NODE)
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = state
        for key in parents:
            target = target[key]
        target[last] = value
    return state


def preflight(state=None, **variables):
    return os_baseline.preflight(host="n1", node=state or NODE, variables={**VARIABLES, **variables})


def test_a_node_as_wanted_has_no_problem_and_needs_no_reboot():
    assert preflight() == {"problems": [], "reboot_reasons": []}


def test_every_problem_at_once_each_with_its_fix():
    state = node(os__id="centos", os__major="7", os__name="CentOS Linux", os__version_id="7", kernel__drift=True,
                 kernel__newest="6.1.0-41-amd64", boot__loader="none")  # fmt: skip
    result = preflight(state, os_baseline_disable_swap=False, os_baseline_kernel_drift_action="fail",
                       os_baseline_kernel_cmdline=["iommu=pt", "pci=realloc=off"])  # fmt: skip
    assert result["problems"] == [
        "os_baseline_disable_swap is false (swap kept) but gpuops_kubernetes_join is true: kubelet refuses to start "
        "with swap on (failSwapOn). Fix: set os_baseline_disable_swap: true, or gpuops_kubernetes_join: false for "
        "nodes that stay out of Kubernetes.",
        "n1 runs CentOS Linux (ID=centos, VERSION_ID=7), which os_baseline does not support. Supported: Debian 12/13, "
        "Ubuntu 22.04/24.04, Rocky Linux and RHEL 8/9. Fix: install a supported release, or remove the host from "
        "this play.",
        "n1 runs kernel 6.1.0-40-amd64 but 6.1.0-41-amd64 is installed too, so the next boot changes kernel under "
        "DKMS, and os_baseline_kernel_drift_action is fail. Fix: reboot into 6.1.0-41-amd64 (or remove it), or set "
        "os_baseline_kernel_drift_action: warn.",
        'os_baseline_kernel_cmdline is ["iommu=pt", "pci=realloc=off"] but n1 has no bootloader this role manages '
        "(GRUB with /etc/default/grub and update-grub, or grubby). Fix: install GRUB, or set "
        "os_baseline_kernel_cmdline: [] and manage the command line yourself.",
    ]
    # The reboot is worked out too, for the gate that comes after the problems are fixed.
    assert result["reboot_reasons"] == ["kernel arguments pci=realloc=off are not in the running command line"]


@pytest.mark.parametrize(
    ("os_id", "major", "supported"),
    [("debian", "12", True), ("debian", "13", True), ("debian", "11", False), ("ubuntu", "22", True),
     ("ubuntu", "24", True), ("ubuntu", "20", False), ("rocky", "9", True), ("rhel", "8", True), ("rhel", "10", False),
     ("almalinux", "9", False), (None, None, False)],
)  # fmt: skip
def test_the_supported_releases(os_id, major, supported):
    problems = preflight(node(os__id=os_id, os__major=major))["problems"]
    assert (problems == []) is supported
    if not supported:
        assert "which os_baseline does not support" in problems[0]


def test_an_unknown_os_is_named_as_such():
    state = node(os__name="", os__id=None)
    assert preflight(state)["problems"][0].startswith("n1 runs an unknown OS (ID=None, VERSION_ID=12)")


def test_swap_may_stay_on_outside_kubernetes():
    assert preflight(os_baseline_disable_swap=False, gpuops_kubernetes_join=False)["problems"] == []


def test_drift_fails_only_when_asked_to():
    state = node(kernel__drift=True)
    assert preflight(state)["problems"] == []
    assert (
        "os_baseline_kernel_drift_action is fail"
        in preflight(state, os_baseline_kernel_drift_action="fail")["problems"][0]
    )


def test_repository_problems_are_numbered_by_entry():
    repos = [{"name": "ok", "uris": ["https://repo.example.com/apt"], "suites": ["stable"], "components": ["main"],
              "key_url": "https://repo.example.com/key.asc", "key_fingerprint": "A" * 40},
             {"name": "bad", "uris": ["https://repo.example.com/apt"], "suites": ["/"], "components": ["main"],
              "key_content": "-----BEGIN PGP PUBLIC KEY BLOCK-----"}]  # fmt: skip
    (problem,) = preflight(os_baseline_package_repositories=repos)["problems"]
    assert problem.startswith("os_baseline_package_repositories[1] a flat repository (suite '/') takes no components")
    assert problem.endswith("key_fingerprint: <the vendor's fingerprint>}.")
    # A node whose package manager is unknown has its OS refused; its repositories are not judged against nothing.
    assert len(preflight(node(os__package_manager=None, os__id="slackware"), os_baseline_package_repositories=repos)[
        "problems"
    ]) == 1  # fmt: skip


def test_a_container_needs_no_reboot_and_no_bootloader():
    state = node(capabilities__own_kernel=False, boot__loader="none", kernel_modules__nouveau="loaded")
    assert preflight(state, os_baseline_kernel_cmdline=["absent=1"]) == {"problems": [], "reboot_reasons": []}


@pytest.mark.parametrize(
    ("changes", "variables", "reasons"),
    [
        ({}, {"os_baseline_kernel_cmdline": []}, []),
        ({}, {"os_baseline_kernel_cmdline": ["iommu=pt", "a=1", "b"]},
         ["kernel arguments a=1 b are not in the running command line"]),
        ({"kernel_modules__nouveau": "loaded"}, {}, ["nouveau is loaded"]),
        ({"kernel_modules__nouveau": "loaded"}, {"os_baseline_blacklist_nouveau": False}, []),
        ({"kernel_modules__nouveau": "builtin"}, {}, []),
        ({"kernel_modules__nouveau": "loaded"}, {"os_baseline_kernel_cmdline": ["x"]},
         ["kernel arguments x are not in the running command line", "nouveau is loaded"]),
    ],
)  # fmt: skip
def test_reboot_reasons(changes, variables, reasons):
    assert preflight(node(**changes), **variables)["reboot_reasons"] == reasons


def test_no_bootloader_is_a_problem_only_with_arguments_to_manage():
    state = node(boot__loader="none")
    assert preflight(state, os_baseline_kernel_cmdline=[])["problems"] == []
    assert "has no bootloader this role manages" in preflight(state)["problems"][0]
