"""nvidia_driver with nvidia_driver_source: cuda_repo on Debian 12 (simulated HGX H100): the real state of the node
after converge. The driver comes from the stand-in of NVIDIA's debian12 repository (two 550 versions; the scenario
pins the older), fabric manager from the same repository at the same version, and DCGM at its pin (the older of the
two versions the repository carries) with the plugins for the driver's CUDA 12.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# The HGX node; l40s is the PCIe node (test_pcie.py), cp the control plane test_upgrade.py drains h100 through.
testinfra_hosts = ["h100"]

VERSION = "550.144.03"
DEBIAN_VERSION = VERSION + "-1"
DKMS_MODULE = "nvidia-current"
SUFFIXES = ["", "-modeset", "-drm", "-uvm", "-peermem"]
DRIVER_PACKAGES = [
    "nvidia-kernel-dkms",
    "firmware-nvidia-gsp",
    "nvidia-smi",
    "libcuda1",
    "libnvidia-cfg1",
    "libnvidia-ml1",
    "nvidia-persistenced",
    "nvidia-fabricmanager-550",
]
DCGM_VERSION = "1:4.2.3-1"
DCGM_PACKAGES = ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary",
                 "datacenter-gpu-manager-4-cuda12", "datacenter-gpu-manager-4-proprietary-cuda12"]  # fmt: skip
REPOSITORY = "gpuops-mirror:8080/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64"
CONVERGE = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml"


def version(host, package):
    return host.check_output(f"dpkg-query -W -f '${{Version}}' {package}")


def image_kernels(host):
    """The kernels the node boots: those with an image under /boot (the container's running one is not)."""
    names = host.check_output("ls /boot").split()
    return sorted(name[len("vmlinuz-") :] for name in names if name.startswith("vmlinuz-"))


def test_every_driver_package_sits_at_the_pinned_nvidia_version_and_is_held(host):
    held = host.check_output("apt-mark showhold").split()
    for package in DRIVER_PACKAGES:
        assert version(host, package) == DEBIAN_VERSION, package
        assert package in held, package


def installed_from(policy):
    """The sources apt-cache policy lists under the installed version (the line marked ***)."""
    sources, inside = [], False
    for line in policy.splitlines():
        if line.startswith(" *** "):
            inside = True
        elif line.startswith("     ") and not line.startswith("        "):
            inside = False
        elif inside:
            sources.append(line.strip())
    return sources


def test_the_packages_come_from_nvidias_repository_through_the_mirror(host):
    for package in ["nvidia-kernel-dkms", "libcuda1"]:
        policy = host.check_output(f"apt-cache policy {package}")
        assert f"Installed: {DEBIAN_VERSION}" in policy, policy
        assert any(REPOSITORY in source for source in installed_from(policy)), policy


def test_no_debian_driver_package_is_mixed_in(host):
    # Debian 12's own NVIDIA packages are 535.x-N~deb12uN: none may be installed next to NVIDIA's.
    listing = host.check_output(
        "dpkg-query -W -f '${Package} ${Version}\\n' 'nvidia-*' 'libnvidia-*' 'libcuda*' 'firmware-nvidia-*' "
        "2>/dev/null || true"
    )
    installed = [line.split() for line in listing.splitlines() if len(line.split()) == 2]
    assert installed, listing
    assert [p for p, v in installed if "deb12" in v or not v.startswith("550.")] == []


def test_no_apt_preference_holds_nvidias_repository_back(host):
    assert not host.file("/etc/apt/preferences.d/gpuops-nvidia-cuda").exists


def test_dkms_built_the_module_for_every_kernel_the_node_boots(host):
    status = host.check_output("dkms status")
    kernels = image_kernels(host)
    assert kernels, "the node image carries a kernel"
    for kernel in kernels:
        assert f"{DKMS_MODULE}/{VERSION}, {kernel}, x86_64: installed" in status.splitlines(), status
        for suffix in SUFFIXES:
            found = host.check_output(f"ls /lib/modules/{kernel}/updates/dkms/ | grep -c '^{DKMS_MODULE}{suffix}[.]ko'")
            assert found == "1", f"{DKMS_MODULE}{suffix} for {kernel}"


def test_dpkg_reports_no_broken_package(host):
    assert host.check_output("dpkg --audit") == ""


def test_dcgm_sits_at_its_pin_with_the_drivers_cuda_plugins_and_is_held(host):
    held = host.check_output("apt-mark showhold").split()
    for package in DCGM_PACKAGES:
        assert version(host, package) == DCGM_VERSION, package
        assert package in held, package
    # Not the other CUDA major versions' plugins.
    listing = host.check_output("dpkg-query -W -f '${Package}\\n' 'datacenter-gpu-manager-4-*'")
    assert sorted(listing.split()) == sorted(DCGM_PACKAGES)
    assert host.check_output("dcgmi --version").strip() == "dcgmi  version: 4.2.3"


def test_persistenced_fabric_manager_and_dcgm_are_enabled_and_not_left_failed(host):
    for unit in ["nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm"]:
        assert host.service(unit).is_enabled, unit
        assert host.run(f"systemctl is-failed {unit}").stdout.strip() != "failed", unit


def test_verification_passes_at_the_pinned_version(host):
    proc = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(CONVERGE), "--tags",
         "nvidia_driver_verify", "--limit", "h100"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip
    output = " ".join((proc.stdout + proc.stderr).split()).replace("''", "'")
    assert proc.returncode == 0, output[-3000:]
    assert f"h100 passed nvidia_driver verification: driver {VERSION} (NVIDIA's debian12 repository," in output
    assert f"fabric manager nvidia-fabricmanager-550 {DEBIAN_VERSION} enabled, DCGM 4.2.3 (CUDA 12 plugins) " in output
