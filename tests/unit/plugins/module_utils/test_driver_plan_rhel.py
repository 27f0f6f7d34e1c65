"""The driver role's decisions on Rocky Linux and RHEL: the role's RHEL table (roles/nvidia_driver/vars/RedHat.yml),
dnf's EVRs compared in rpm's order, install specs in dnf's name-EPOCH:VERSION-RELEASE form, kernel-devel as the
headers, fabric manager's rpm names.

The versions follow NVIDIA's rhel9 repository's form, epoch 3 and an .el9 release ("kmod-nvidia-latest-dkms
3:570.86.15-1.el9" in `dnf info` output quoted in instructlab/instructlab#3190,
"kmod-nvidia-open-dkms-3:595.45.04-1.el9" in repoquery output quoted in NVIDIA/yum-packaging-precompiled-kmod#68);
the kernels are RHEL 9.4's and 9.5's releases. They are inputs to the decisions, not captures of a parser's input.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, driver_plan, rpm

VARS = Path(__file__).resolve().parents[4] / "roles" / "nvidia_driver" / "vars"
RHEL = yaml.safe_load((VARS / "RedHat.yml").read_text())["__nvidia_driver_cuda_repo"]
WHERE = "NVIDIA's CUDA repository packages for RHEL (https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/)"
OLD, NEW = "3:570.86.15-1.el9", "3:570.124.06-1.el9"
PACKAGES = ["nvidia-kmod-common", "nvidia-driver-cuda", "nvidia-driver-cuda-libs", "nvidia-persistenced"]
INDEX = {name: [OLD, NEW] for name in ["kmod-nvidia-latest-dkms", "kmod-nvidia-open-dkms", *PACKAGES]}
KERNEL_94 = "5.14.0-427.13.1.el9_4.x86_64"
KERNEL_95 = "5.14.0-503.11.1.el9_5.x86_64"


def plan(info=None, flavor="open", pin=""):
    merged = driver_plan.repository_info(info or {}, INDEX, "dnf")
    return driver_plan.choose_packages(RHEL["branches"]["570"], flavor, pin, merged, [], WHERE, "570", "dnf")


def node(installed, running, newest):
    return {"os": {"family": "RedHat"}, "kernel": {"installed": installed, "running": running, "newest": newest}}


def test_rpm_upstream_version_drops_epoch_and_release():
    assert rpm.upstream_version(NEW) == "570.124.06"
    assert rpm.upstream_version("550.163.01-1") == "550.163.01"


@pytest.mark.parametrize(
    ("flavor", "kmod", "dkms", "stream"),
    [
        ("open", "kmod-nvidia-open-dkms", "nvidia-open", "570-open"),
        ("proprietary", "kmod-nvidia-latest-dkms", "nvidia", "570-dkms"),
    ],
)
def test_the_newest_compute_only_rpms_of_the_branch_with_their_stream(flavor, kmod, dkms, stream):
    result = plan(flavor=flavor)
    assert result["problem"] is None
    assert (result["version"], result["package_version"], result["dkms_module"], result["stream"]) == (
        "570.124.06",
        NEW,
        dkms,
        stream,
    )
    assert result["steps"] == {
        "kernel_modules": [f"{kmod}-{NEW}", f"nvidia-kmod-common-{NEW}"],
        "userland": [f"{name}-{NEW}" for name in PACKAGES[1:]],
    }


def test_an_installed_version_stays_and_a_pin_picks_its_evr():
    installed = {"kmod-nvidia-open-dkms": {"installed": OLD}}
    assert plan(installed)["package_version"] == OLD
    assert plan(pin="570.86.15")["steps"]["kernel_modules"][0] == f"kmod-nvidia-open-dkms-{OLD}"


def test_a_pin_the_repository_lacks_names_what_it_carries():
    assert plan(pin="570.133.20")["problem"] == (
        f"nvidia_driver_version is 570.133.20, which {WHERE} do not carry for branch 570 with the open kernel modules "
        "(they carry 570.124.06 (NVIDIA's RHEL repository), 570.86.15 (NVIDIA's RHEL repository)). Fix: one of "
        'those, or nvidia_driver_version: "" for the newest.'
    )


def test_rpm_order_decides_the_newest_release():
    """A respun release 1.1.el9 is newer than 1.el9 in rpm's order (a number sorts after letters), older in dpkg's:
    the plan follows rpm's."""
    respun = "3:570.124.06-1.1.el9"
    assert apt.compare_versions(respun, NEW) < 0
    index = {name: [NEW, respun] for name in INDEX}
    merged = driver_plan.repository_info({}, index, "dnf")
    result = driver_plan.choose_packages(RHEL["branches"]["570"], "open", "", merged, [], WHERE, "570", "dnf")
    assert result["package_version"] == respun


def test_kernel_devel_of_each_kernel_is_the_headers_and_a_build_tree_needs_none():
    state = node([KERNEL_94, KERNEL_95], KERNEL_94, KERNEL_95)
    info = {"kernel-devel": {"installed": "5.14.0-427.13.1.el9_4", "available": ["5.14.0-503.11.1.el9_5"]}}
    result = driver_plan.kernel_targets(state, info, {KERNEL_94: {"headers": True}}, "dnf")
    assert result == {
        "targets": [KERNEL_94, KERNEL_95],
        "headers": [f"kernel-devel-{KERNEL_95}"],
        "skipped": [],
        "problem": None,
    }


def test_the_kernel_booted_next_without_kernel_devel_is_refused():
    state = node([KERNEL_94, KERNEL_95], KERNEL_94, KERNEL_95)
    info = {"kernel-devel": {"available": ["5.14.0-427.13.1.el9_4"]}}
    result = driver_plan.kernel_targets(state, info, {}, "dnf")
    assert result["targets"] == [KERNEL_94]
    assert result["skipped"][0]["reason"] == (
        f"installed, but kernel-devel-{KERNEL_95} is in none of the configured repositories"
    )
    assert result["problem"] == (
        f"kernel {KERNEL_95}, the one this node boots next, has no headers in the configured repositories "
        f"(kernel-devel-{KERNEL_95}), so DKMS cannot build the driver for it and the node would boot without one. "
        f"Fix: enable the repository that carries kernel-devel-{KERNEL_95} (RHEL: AppStream; a mirror: sync it to "
        "the kernel's update), or remove that kernel."
    )


def test_no_kernel_to_build_for_names_kernel_devel():
    result = driver_plan.kernel_targets(node([KERNEL_95], KERNEL_95, KERNEL_95), {}, {}, "dnf")
    assert result["problem"].endswith(
        "Fix: install the distribution kernel (kernel-core) and dnf install kernel-devel-$(uname -r) from the OS's "
        "repositories (BaseOS, AppStream)."
    )


@pytest.mark.parametrize(
    ("branch", "package"),
    [("535", "nvidia-fabric-manager"), ("575", "nvidia-fabric-manager"), ("580", "nvidia-fabricmanager")],
)
def test_fabric_manager_rpm_by_branch(branch, package):
    assert driver_plan.fabricmanager_package(branch, "dnf") == package


def test_fabric_manager_at_the_drivers_version_in_rpm_order():
    index = {"nvidia-fabric-manager": ["570.86.15-1", "570.124.06-1"]}
    result = driver_plan.choose_fabricmanager(index, {}, plan(), "570", WHERE, "dnf")
    assert result == {"package": "nvidia-fabric-manager", "version": "570.124.06-1", "problem": None}
    missing = driver_plan.choose_fabricmanager(
        {"nvidia-fabric-manager": ["570.86.15-1"]}, {}, plan(), "570", WHERE, "dnf"
    )
    assert "carries nvidia-fabric-manager only at 570.86.15:" in missing["problem"]


def test_another_installed_flavour_is_an_upgrade_named_in_evrs():
    installed = {"kmod-nvidia-latest-dkms": {"installed": OLD}, "nvidia-driver-cuda": {"installed": OLD}}
    result = driver_plan.install_problems(
        RHEL["branches"], installed, plan(), [], ["nvidia-persistenced"], False, "dnf"
    )
    assert result["upgrade"] == {
        "from": f"kmod-nvidia-latest-dkms {OLD} (driver 570.86.15)",
        "remove": ["kmod-nvidia-latest-dkms"],
    }
