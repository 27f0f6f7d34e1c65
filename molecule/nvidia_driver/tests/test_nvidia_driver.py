"""nvidia_driver with its defaults on Debian 13 (a simulated HGX H100 with NVSwitches): the real state of the node
after converge, which built Debian's 535 with DKMS and installed fabric manager and DCGM from NVIDIA's repository.
The PCIe path (no fabric manager) and a DKMS build that fails are checked by nvidia_driver_cuda_repo's L40S node.

Versions are read from the node (what the role resolved from the archive), so a Debian point release that moves
the 535 branch does not break the tests; what must hold is that every package sits at that one version, held, and
on the HGX node fabric manager at exactly that driver version.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DKMS_MODULE = "nvidia-tesla-535"
SUFFIXES = ["", "-modeset", "-drm", "-uvm", "-peermem"]
DRIVER_PACKAGES = [
    "nvidia-tesla-535-kernel-dkms",
    "firmware-nvidia-tesla-535-gsp",
    "nvidia-tesla-535-smi",
    "libnvidia-tesla-535-cuda1",
    "libnvidia-tesla-535-cfg1",
    "libnvidia-tesla-535-ml1",
]
FABRICMANAGER = "nvidia-fabricmanager-535"
DCGM_PACKAGES = [f"datacenter-gpu-manager-4-{name}" for name in ("core", "proprietary", "cuda12", "proprietary-cuda12")]
CUDA_SOURCE = "/etc/apt/sources.list.d/nvidia-cuda.sources"
CONVERGE = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml"
FIXTURES = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "tests" / "fixtures"


def version(host, package):
    return host.check_output(f"dpkg-query -W -f '${{Version}}' {package}")


def image_kernels(host):
    """The kernels the node boots: those with an image under /boot (the container's running one is not)."""
    names = host.check_output("ls /boot").split()
    return sorted(name[len("vmlinuz-") :] for name in names if name.startswith("vmlinuz-"))


@pytest.fixture(scope="module")
def driver(host):
    """The driver's upstream version, as resolved and installed."""
    debian = version(host, "nvidia-tesla-535-kernel-dkms")
    assert debian.startswith("535.")
    return debian.rsplit("-", 1)[0]


def test_dkms_installed_the_module_for_every_kernel_the_node_boots(host, driver):
    status = host.check_output("dkms status")
    kernels = image_kernels(host)
    assert kernels, "the node image carries a kernel"
    for kernel in kernels:
        assert f"{DKMS_MODULE}/{driver}, {kernel}, x86_64: installed" in status.splitlines(), status


def test_the_five_modules_are_under_updates_dkms(host):
    for kernel in image_kernels(host):
        for suffix in SUFFIXES:
            path = f"/lib/modules/{kernel}/updates/dkms/{DKMS_MODULE}{suffix}.ko.xz"
            assert host.file(path).is_file, path
        # modinfo reads the module DKMS built: the driver's version, for this kernel.
        info = host.check_output(f"modinfo /lib/modules/{kernel}/updates/dkms/{DKMS_MODULE}.ko.xz")
        assert re.search(rf"^vermagic:\s+{re.escape(kernel)} ", info, re.MULTILINE)


def test_every_driver_package_sits_at_the_one_resolved_version_and_is_held(host, driver):
    held = host.check_output("apt-mark showhold").split()
    versions = {p: version(host, p) for p in DRIVER_PACKAGES}
    assert len(set(versions.values())) == 1, versions
    assert next(iter(versions.values())).startswith(driver + "-")
    for package in [*DRIVER_PACKAGES, "nvidia-persistenced"]:
        assert package in held, package


def test_the_headers_follow_the_held_kernel_not_the_newest_in_the_archive(host):
    # os_baseline holds linux-image-amd64; Debian's -security suite may carry newer headers by now.
    assert version(host, "linux-headers-amd64") == version(host, "linux-image-amd64")
    for kernel in image_kernels(host):
        assert host.package(f"linux-headers-{kernel}").is_installed


def test_compute_userland_only_no_x_server(host):
    assert not host.package("nvidia-tesla-535-driver").is_installed
    assert not host.package("xserver-xorg-core").is_installed


def test_nvidia_smi_in_usr_bin_comes_from_the_driver_package(host):
    target = host.check_output("readlink -f /usr/bin/nvidia-smi")
    assert host.check_output(f"dpkg -S {target}").startswith("nvidia-tesla-535-smi: ")


def test_dpkg_reports_no_broken_package(host):
    # dpkg --audit exits 0 whatever it finds: its output is the answer.
    assert host.check_output("dpkg --audit") == ""


def test_persistenced_is_enabled_and_not_left_failed(host):
    service = host.service("nvidia-persistenced")
    assert service.is_enabled
    # It cannot start in a container (no /dev/nvidia*); a failed unit would mark the system degraded.
    assert host.run("systemctl is-failed nvidia-persistenced").stdout.strip() != "failed"


def test_verification_fails_on_a_package_no_longer_held(host, stage_run):
    host.run_expect([0], "apt-mark unhold nvidia-persistenced")
    try:
        rc, output = stage_run(CONVERGE, "nvidia_driver_verify", ["--limit", "h100"])
    finally:
        host.run_expect([0], "apt-mark hold nvidia-persistenced")
    assert rc != 0
    assert "h100 failed nvidia_driver verification: nvidia-persistenced is not held" in output


def test_fabric_manager_sits_at_the_driver_version_and_is_held(host, driver):
    installed = version(host, FABRICMANAGER)
    assert installed.rsplit("-", 1)[0] == driver, installed
    assert FABRICMANAGER in host.check_output("apt-mark showhold").split()
    # The binary says the same version (its real --version format).
    assert host.check_output("nv-fabricmanager --version") == f"Fabric Manager version is : {driver}"


def test_fabric_manager_comes_from_the_cuda_repository_through_the_mirror(host):
    source = host.file(CUDA_SOURCE).content_string
    assert "URIs: http://gpuops-mirror:8080/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/" in source
    assert "Signed-By: /etc/apt/keyrings/nvidia-cuda.asc" in source
    policy = host.check_output(f"apt-cache policy {FABRICMANAGER}")
    assert "gpuops-mirror:8080/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64" in policy


def test_dcgm_comes_by_default_at_its_pin_with_the_cuda_12_plugins_held(host):
    # nvidia_driver_dcgm is on unless set: DCGM from NVIDIA's repository beside Debian's driver (CUDA 12 for 535).
    held = host.check_output("apt-mark showhold").split()
    for package in DCGM_PACKAGES:
        assert version(host, package) == "1:4.4.1-1", package
        assert package in held, package
    assert host.service("nvidia-dcgm").is_enabled
    # nv-hostengine cannot start without a driver; a failed unit would mark the system degraded.
    assert host.run("systemctl is-failed nvidia-dcgm").stdout.strip() != "failed"


def test_fabric_manager_is_enabled_not_left_failed_and_has_its_config(host):
    assert host.service("nvidia-fabricmanager").is_enabled
    # It cannot start in a container (no NVSwitch driver); a failed unit would mark the system degraded.
    assert host.run("systemctl is-failed nvidia-fabricmanager").stdout.strip() != "failed"
    assert host.file("/usr/share/nvidia/nvswitch/fabricmanager.cfg").is_file


def test_hgx_verification_checks_fabric_manager_and_the_nvswitch_fabric(host, driver, stage_run):
    rc, output = stage_run(CONVERGE, "nvidia_driver_verify", ["--limit", "h100"])
    assert rc == 0, output[-3000:]
    assert f"h100 passed nvidia_driver verification: driver {driver} (nvidia-graphics-drivers-tesla-535," in output
    assert f"fabric manager {FABRICMANAGER} {driver}-1 enabled," in output
    assert "8 GPU(s) NVIDIA H100 80GB HBM3 [SIMULATED hgx_h100_8gpu], NVSwitch fabric Completed on every GPU" in output
    assert "running nvidia-persistenced, nvidia-fabricmanager and nvidia-dcgm (this node's kernel belongs" in output
    assert "replayed from another machine's capture" in output


def test_hgx_verification_fails_when_fabric_manager_is_not_held(host, stage_run):
    host.run_expect([0], f"apt-mark unhold {FABRICMANAGER}")
    try:
        rc, output = stage_run(CONVERGE, "nvidia_driver_verify", ["--limit", "h100"])
    finally:
        host.run_expect([0], f"apt-mark hold {FABRICMANAGER}")
    assert rc != 0
    assert f"h100 failed nvidia_driver verification: {FABRICMANAGER} is not held" in output


@pytest.mark.parametrize(
    ("capture", "message"),
    [
        ("h100-sxm-x8-565-gpu3-missing.derived.xml", "nvidia-smi: nvidia-smi sees 7 GPUs; this node should have 8"),
        ("h100-sxm-x8-565-fabric-in-progress.derived.xml",
         "nvidia-smi: NVSwitch fabric registration not complete on 8 of 8 GPU(s) (state In Progress: "
         "00000000:18:00.0,"),
    ],
    ids=["gpu_missing", "fabric_in_progress"],
)  # fmt: skip
def test_hgx_verification_fails_on_a_gpu_fault(host, capture, message, stage_run, replay_fault):
    with replay_fault(host, "nvidia-smi", "-q -x", FIXTURES / "nvidia_smi" / capture):
        rc, output = stage_run(CONVERGE, "nvidia_driver_verify", ["--limit", "h100"])
    assert rc != 0
    assert f"h100 failed nvidia_driver verification: {message}" in output, output[-3000:]


def candidate(host, package):
    policy = host.check_output(f"apt-cache policy {package}")
    return next(line.split(":", 1)[1].strip() for line in policy.splitlines() if line.strip().startswith("Candidate:"))


def test_nvidias_repository_lends_no_driver_package_where_the_driver_comes_from_debian(host):
    # The stand-in of NVIDIA's debian12 repository also carries its own driver packages, up to 580.95.05-1 (above
    # Debian 13's 550): the role's apt preferences keep Debian's versions the candidates, so neither a dependency nor
    # a later apt upgrade mixes NVIDIA's packages into Debian's set; fabric manager, which Debian lacks, still comes
    # from NVIDIA's repository.
    preferences = host.file("/etc/apt/preferences.d/gpuops-nvidia-cuda").content_string
    assert "Pin: release o=Debian" in preferences
    assert "580.95.05-1" in host.check_output("apt-cache madison nvidia-kernel-dkms nvidia-persistenced")
    for package in ["nvidia-kernel-dkms", "nvidia-persistenced", "libcuda1"]:
        assert not candidate(host, package).startswith("580."), package
    assert candidate(host, FABRICMANAGER).startswith("535.")
