"""nvidia_driver from NVIDIA's CUDA repository on RHEL 9, whole: preflight, the module stream, the install with dnf
(DKMS building the kernel modules), versionlock, nvidia-persistenced and fabric manager, verification; then
idempotence and check mode; and a DKMS build that fails, rolled back, and the run after it.

The nodes are bench containers (Debian 12) with RHEL 9.6's real os-release and Debian's rpm and dnf (RHEL 9's dnf
version): os_facts reads them as RHEL, and the role goes the dnf way throughout. The repository is the bench's modular
stand-in of NVIDIA's rhel9 repository through the mirror (tests/standins/cuda-repo-rhel9-driver: streams
nvidia-driver:550-dkms and 550-open, signed by the bench's key, pinned in its place), whose DKMS packages carry a
stand-in module source that REAL DKMS (Debian's, which an rpm record stands for: NVIDIA's rpms require EPEL's dkms)
builds against the image kernel's REAL headers (Debian's linux-headers, from apt); 550.144.03's source does not build.
The hardware profile says NVSwitch, so fabric manager comes too; DCGM 4 (its core, proprietary and CUDA 12 rpms, epoch
1, from the same repository's stand-in tests/standins/cuda-repo-rhel-dcgm) comes with them.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import subprocess
from pathlib import Path

import pytest
from preflight_harness import BENCH_KEY_FINGERPRINT, MIRROR, ROOT, bench_nodes

PLAYBOOK = Path(__file__).with_name("nvidia_driver_converge.yml")
NODES = ("rhel9", "rhel9fail")
EVR = "3:550.163.01-1.el9"
PACKAGES = ["kmod-nvidia-latest-dkms", "nvidia-kmod-common", "nvidia-driver-cuda", "nvidia-driver-cuda-libs",
            "nvidia-persistenced"]  # fmt: skip
DCGM_EVR = "1:4.4.1-1"
DCGM = ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary", "datacenter-gpu-manager-4-cuda12",
        "datacenter-gpu-manager-4-proprietary-cuda12"]  # fmt: skip
VARIABLES = {
    "nvidia_driver_source": "cuda_repo",
    "nvidia_driver_branch": "550",
    "gpuops_mirror_url": MIRROR,
    "nvidia_driver_cuda_repo_rpm_key_fingerprint": BENCH_KEY_FINGERPRINT,
    "gpuops_hardware": {"profile": "hgx_h100_8gpu", "gpu": {"nvswitch": True}},
    "nvidia_driver_dcgm": True,
}
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    specs = [{"name": n, "image": "debian12-rpm"} for n in NODES]
    with bench_nodes(tmp_path_factory, "driver-rhel", specs) as started:

        def prepare(name: str) -> None:
            started.rhel_userland(name, "9")
            started.debian_sources(name, "bookworm")
            # DKMS and the image kernel's headers, from Debian's archive through the mirror; an rpm record of dkms,
            # which NVIDIA's DKMS packages require (EPEL's on RHEL).
            started.sh(name, "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dkms "
                             "linux-headers-$(ls /lib/modules)")  # fmt: skip
            started.rpm_installed(name, "dkms", "3.0.10-8", "dkms")
            started.os_release(name, "rhel-9.6")

        with concurrent.futures.ThreadPoolExecutor(len(NODES)) as pool:
            list(pool.map(prepare, NODES))
        yield started


def converge(nodes, node: str, *extra: str, **variables) -> tuple[str, tuple[int, int, int]]:
    """Run the role on one node (VARIABLES, some replaced); return its output and (changed, unreachable, failed)."""
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(nodes.inventory), "--limit", node, "--extra-vars",
         json.dumps({**VARIABLES, **variables}), *extra, str(PLAYBOOK)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    recap = {host: tuple(int(n) for n in counts) for host, *counts in RECAP.findall(proc.stdout)}
    assert node in recap, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout + proc.stderr, recap[node]


def read(nodes, node: str, command: str) -> str:
    return subprocess.run(["podman", "exec", nodes.containers[node], "sh", "-c", command],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip


def changed_tasks(output: str) -> list[str]:
    return [" ".join(block.split("]")[0].split()) for block in output.split("TASK [")[1:] if "\nchanged: " in block]


@pytest.fixture(scope="module")
def converged(nodes):
    """The first converge, then the second and a check-mode run: (output, counts) of each."""
    return [converge(nodes, "rhel9"), converge(nodes, "rhel9"), converge(nodes, "rhel9", "--check", "--diff")]


def test_the_first_run_installs_builds_and_verifies(converged):
    output, (changed, unreachable, failed) = converged[0]
    assert (unreachable, failed) == (0, 0), output[-4000:]
    # NVIDIA's %post builds for the running kernel only (the container host's, without headers): the role builds
    # for its target kernel, the image's.
    tasks = changed_tasks(output)
    assert tasks == [
        f"gpuops.bringup.{task}"
        for task in (
            "_common : Add NVIDIA's CUDA repository",
            "nvidia_driver : Enable the driver branch's module stream",
            "nvidia_driver : Install the kernel module package and nvidia-kmod-common (rpm %post builds the module "
            "with DKMS)",
            "nvidia_driver : Build the module for the target kernels DKMS has not installed it for",
            "nvidia_driver : Install the compute userland (nvidia-smi, libcuda, NVML) and nvidia-persistenced (dnf)",
            "nvidia_driver : Install fabric manager at the driver's version (dnf)",
            "nvidia_driver : Install DCGM at the pinned version (dnf)",
            "nvidia_driver : Hold the driver packages at their versions",
            "nvidia_driver : Enable nvidia-persistenced, and start it where the driver runs now",
            "nvidia_driver : Enable fabric manager and DCGM, and start them where the driver runs now",
        )
    ], output[-4000:]
    assert changed == len(tasks)
    flat = " ".join(output.split())
    assert "rhel9 passed nvidia_driver verification: driver 550.163.01" in flat, flat[-3000:]


def test_the_second_run_and_check_mode_change_nothing(converged):
    (second, second_counts), (check, check_counts) = converged[1], converged[2]
    assert second_counts == (0, 0, 0), second[-4000:]
    assert check_counts == (0, 0, 0), check[-4000:]


@pytest.mark.usefixtures("converged")
def test_the_stream_the_rpms_and_their_locks(nodes):
    stream = read(nodes, "rhel9", "cat /etc/dnf/modules.d/nvidia-driver.module")
    assert "stream=550-dkms\n" in stream and "state=enabled\n" in stream, stream
    installed = read(nodes, "rhel9", "rpm -q --qf '%{NAME} %{EPOCH}:%{VERSION}-%{RELEASE}\\n' " + " ".join(PACKAGES))
    assert installed.splitlines() == [f"{name} {EVR}" for name in PACKAGES]
    assert read(nodes, "rhel9", "rpm -q --qf '%{VERSION}-%{RELEASE}' nvidia-fabric-manager") == "550.163.01-1"
    locks = read(nodes, "rhel9", "cat /etc/dnf/plugins/versionlock.list")
    for name in PACKAGES:
        assert f"\n{name}-{EVR}.*\n" in locks, locks
    assert "\nnvidia-fabric-manager-0:550.163.01-1.*\n" in locks, locks
    dcgm = read(nodes, "rhel9", "rpm -q --qf '%{NAME} %{EPOCH}:%{VERSION}-%{RELEASE}\\n' " + " ".join(DCGM))
    assert dcgm.splitlines() == [f"{name} {DCGM_EVR}" for name in DCGM]
    for name in DCGM:
        assert f"\n{name}-{DCGM_EVR}.*\n" in locks, locks
    # The other flavour's package never came: the stream hides it.
    assert (
        read(nodes, "rhel9", "rpm -q kmod-nvidia-open-dkms || true").strip()
        == "package kmod-nvidia-open-dkms is not installed"
    )


@pytest.mark.usefixtures("converged")
def test_dkms_built_and_installed_the_modules_for_the_image_kernel(nodes):
    kernel = read(nodes, "rhel9", "ls /lib/modules").strip()
    assert read(nodes, "rhel9", "dkms status").strip() == f"nvidia/550.163.01, {kernel}, x86_64: installed"
    files = read(nodes, "rhel9", f"ls /lib/modules/{kernel}/extra").split()
    assert files == ["nvidia-drm.ko", "nvidia-modeset.ko", "nvidia-peermem.ko", "nvidia-uvm.ko", "nvidia.ko"]


@pytest.mark.usefixtures("converged")
def test_persistenced_fabric_manager_and_dcgm_are_enabled(nodes):
    enabled = read(nodes, "rhel9", "systemctl is-enabled nvidia-persistenced nvidia-fabricmanager nvidia-dcgm")
    assert enabled.split() == ["enabled", "enabled", "enabled"]
    assert read(nodes, "rhel9", "dcgmi --version").strip() == "dcgmi  version: 4.4.1"


@pytest.mark.usefixtures("converged")
def test_a_flavour_change_is_an_upgrade_check_mode_first(nodes):
    """The open modules over the installed proprietary ones: in check mode the upgrade is reported (the lock release,
    the old package's removal, the stream switch), with no failure and nothing changed on the node."""
    output, (changed, unreachable, failed_count) = converge(nodes, "rhel9", "--check", nvidia_driver_flavor="open")
    assert (unreachable, failed_count) == (0, 0), output[-4000:]
    assert changed > 0
    assert (
        f"rhel9: upgrade from kmod-nvidia-latest-dkms {EVR} (driver 550.163.01) to driver 550.163.01 "
        f"(kmod-nvidia-open-dkms {EVR}): no drain (nvidia_driver_drain: auto), stop the GPU services, no module to "
        "unload, install, verify, return to service."
    ) in " ".join(output.split()), output[-4000:]
    assert read(nodes, "rhel9", "rpm -q kmod-nvidia-latest-dkms").startswith("kmod-nvidia-latest-dkms-550.163.01")


def test_the_upgrade_switches_stream_package_dkms_module_and_locks(nodes):
    """Run after the tests above on rhel9's first install: the proprietary package goes (its %preun removes its DKMS
    tree), the 550-open stream comes, the open package is built by DKMS and locked in its place."""
    output, (_changed, unreachable, failed_count) = converge(nodes, "rhel9", nvidia_driver_flavor="open")
    assert (unreachable, failed_count) == (0, 0), output[-4000:]
    tasks = changed_tasks(output)
    for task in (
        "nvidia_driver : Release the holds of the installed driver packages",
        "nvidia_driver : Remove the old driver's packages the plan does not keep",
        "nvidia_driver : Enable the driver branch's module stream",
        "nvidia_driver : Install the kernel module package and nvidia-kmod-common (rpm %post builds the module with "
        "DKMS)",
        "nvidia_driver : Hold the driver packages at their versions",
    ):
        assert f"gpuops.bringup.{task}" in tasks, (task, tasks)
    assert "rhel9 passed nvidia_driver verification: driver 550.163.01" in " ".join(output.split())
    kernel = read(nodes, "rhel9", "ls /lib/modules").strip()
    assert read(nodes, "rhel9", "dkms status").strip() == f"nvidia-open/550.163.01, {kernel}, x86_64: installed"
    assert "stream=550-open\n" in read(nodes, "rhel9", "cat /etc/dnf/modules.d/nvidia-driver.module")
    assert read(nodes, "rhel9", "rpm -q kmod-nvidia-latest-dkms || true").strip().endswith("is not installed")
    locks = read(nodes, "rhel9", "cat /etc/dnf/plugins/versionlock.list")
    assert f"\nkmod-nvidia-open-dkms-{EVR}.*\n" in locks and "kmod-nvidia-latest-dkms" not in locks, locks
    # The same CUDA major: DCGM's packages stay, locked.
    assert f"\ndatacenter-gpu-manager-4-cuda12-{DCGM_EVR}.*\n" in locks, locks
    again = converge(nodes, "rhel9", nvidia_driver_flavor="open")
    assert again[1] == (0, 0, 0), again[0][-4000:]


@pytest.fixture(scope="module")
def failed(nodes):
    """A run whose DKMS build fails: the stand-in 550.144.03's source does not compile against the kernel. The
    repository has no fabric manager at 550.144.03, which preflight would refuse: the driver alone, on purpose."""
    return converge(nodes, "rhel9fail", nvidia_driver_version="550.144.03", nvidia_driver_fabricmanager=False)


def test_a_failed_dkms_build_stops_with_its_errors(nodes, failed):
    output, (_changed, unreachable, failed_count) = failed
    assert (unreachable, failed_count) == (0, 1), output[-4000:]
    kernel = read(nodes, "rhel9fail", "ls /lib/modules").strip()
    flat = " ".join(output.split())
    assert (
        "rhel9fail: the DKMS build of NVIDIA driver 550.144.03 (nvidia, rpm kmod-nvidia-latest-dkms "
        f"3:550.144.03-1.el9, proprietary kernel modules) failed for kernel {kernel} (make exit code 2, 2 compiler "
        "error(s)):"
    ) in flat, flat[-3000:]
    assert "too few arguments to function 'pci_resize_resource'" in flat
    assert f"Whole log: /var/log/gpuops/nvidia_driver/nvidia-550.144.03-{kernel}.make.log." in flat


def test_the_failed_run_is_rolled_back_and_its_log_kept(nodes, failed):
    flat = " ".join(failed[0].split())
    removed = re.search(r"The 2 package\(s\) this run installed were removed again \(([^)]*)\)\.", flat)
    assert removed, flat[-3000:]
    assert sorted(removed.group(1).split(", ")) == ["kmod-nvidia-latest-dkms", "nvidia-kmod-common"]
    installed = read(nodes, "rhel9fail", "rpm -qa --qf '%{NAME}\\n'").split()
    assert not [name for name in installed if name.startswith(("kmod-nvidia", "nvidia-"))], installed
    assert read(nodes, "rhel9fail", "dkms status").strip() == ""
    kernel = read(nodes, "rhel9fail", "ls /lib/modules").strip()
    log = read(nodes, "rhel9fail", f"cat /var/log/gpuops/nvidia_driver/nvidia-550.144.03-{kernel}.make.log")
    assert "error: too few arguments to function" in log


def test_the_run_after_the_failure_installs_with_no_cleanup(nodes, failed):
    output, counts = converge(nodes, "rhel9fail")
    assert counts[1:] == (0, 0), output[-4000:]
    assert "rhel9fail passed nvidia_driver verification: driver 550.163.01" in " ".join(output.split())
