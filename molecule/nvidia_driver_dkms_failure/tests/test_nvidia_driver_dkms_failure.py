"""A DKMS build that fails for real (Debian 13's open 550 modules against its 6.12 kernel): the message, the package
state it leaves, and a re-run with a branch that builds, with no cleanup in between.

The order matters: the 535 re-run changes the node the tests before it read. The node is an L40S PCIe box, so this
scenario is also where the PCIe path of the driver (no fabric manager) is checked.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
MESSAGE = "/var/lib/gpuops-test/nvidia_driver_failure.txt"
LOG_DIR = "/var/log/gpuops/nvidia_driver"


def image_kernels(host):
    names = host.check_output("ls /boot").split()
    return sorted(name[len("vmlinuz-") :] for name in names if name.startswith("vmlinuz-"))


@pytest.fixture(scope="module")
def message(host):
    """The role's failure message, as converge's rescue recorded it, with its folding undone."""
    recorded = host.file(MESSAGE)
    assert recorded.exists, "converge did not fail: the role installed the open 550 driver"
    return " ".join(recorded.content_string.split())


def test_the_message_names_driver_kernel_and_compiler_error(host, message):
    (kernel,) = image_kernels(host)
    assert message.startswith(
        "l40s: the DKMS build of NVIDIA driver 550.163.01 (nvidia-current-open, Debian package "
        "nvidia-open-kernel-dkms 550.163.01-"
    ), message
    assert f"open kernel modules) failed for kernel {kernel} (make exit code 2, 1 compiler error(s)):" in message
    assert (
        "nvidia/nv-pci.c: In function 'nv_resize_pcie_bars': | nvidia/nv-pci.c:237:9: error: too few arguments to "
        "function 'pci_resize_resource' | 237 | r = pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size);"
    ) in message
    assert f"Whole log: {LOG_DIR}/nvidia-current-open-550.163.01-{kernel}.make.log." in message


def test_the_message_says_what_was_rolled_back_and_the_fix(message):
    assert re.search(r"The \d+ package\(s\) this run installed were purged again \(", message), message
    assert "dpkg --audit reports no broken package." in message
    assert 'Fix: a driver that builds against this kernel (nvidia_driver_branch: "535", ' in message
    assert "then run again, no cleanup needed." in message


def test_the_whole_build_log_is_kept(host):
    (kernel,) = image_kernels(host)
    log = host.file(f"{LOG_DIR}/nvidia-current-open-550.163.01-{kernel}.make.log")
    # As make wrote it: gcc's quotes follow the node's locale.
    assert log.contains("nv-pci.c:237:9: error: too few arguments to function .pci_resize_resource.")


def test_the_packages_are_as_before(host):
    # dpkg --audit exits 0 whatever it finds: its output is the answer.
    assert host.check_output("dpkg --audit") == ""
    for package in ("nvidia-open-kernel-dkms", "firmware-nvidia-gsp", "nvidia-smi", "dkms", "linux-headers-amd64"):
        assert not host.package(package).is_installed, package
    assert not host.file("/var/lib/dkms/nvidia-current-open").exists
    # Nothing of the driver is held (os_baseline's kernel holds stay).
    assert not [p for p in host.check_output("apt-mark showhold").split() if "nvidia" in p]
    # apt works again: the half-configured package no longer poisons every install.
    host.run_expect([0], "apt-get install --simulate --quiet --yes pciutils")


def stage(*extra):
    """playbooks/driver.yml on the scenario's node; (rc, output with its folding undone)."""
    proc = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(ROOT / "playbooks" / "driver.yml"),
         *extra],
        capture_output=True, text=True, check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )  # fmt: skip
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split()).replace("''", "'")


def test_a_rerun_with_branch_535_succeeds_without_cleanup(host):
    rc, output = stage("-e", "nvidia_driver_branch=535")
    assert rc == 0, output[-4000:]
    assert re.search(r"l40s : ok=\d+ changed=\d+ unreachable=0 failed=0", output)
    assert "l40s passed nvidia_driver verification: driver 535." in output
    assert "4 GPU(s) NVIDIA L40S [SIMULATED pcie_l40s_4gpu]" in output
    assert "this node's kernel belongs to its container host" in output
    (kernel,) = image_kernels(host)
    assert re.search(rf"^nvidia-tesla-535/535\.[0-9.]+, {re.escape(kernel)}, x86_64: installed$",
                     host.check_output("dkms status"), re.MULTILINE)  # fmt: skip
    assert host.check_output("dpkg --audit") == ""


def test_a_pcie_node_gets_no_fabric_manager_and_no_cuda_repository(host):
    # An L40S box has no NVSwitch: nothing of fabric manager, and no NVIDIA repository added for it.
    assert host.check_output("dpkg-query -W -f '${Package} ' 'nvidia-fabricmanager*' 2>/dev/null || true") == ""
    assert not host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").exists
    assert host.service("nvidia-persistenced").is_enabled
