"""prepare's driver whose DKMS build fails for real (Debian 13's open 550 modules against its 6.12 kernel): the
message, the package state the failure left (recorded by prepare before converge changed it), and converge's 535
install over it with no cleanup in between (the re-run the message promises; test_nvidia_driver.py checks the
result).
"""

from __future__ import annotations

import json
import re

import pytest

MESSAGE = "/var/lib/gpuops-test/nvidia_driver_failure.txt"
AFTER_FAILURE = "/var/lib/gpuops-test/after_failure.json"
LOG_DIR = "/var/log/gpuops/nvidia_driver"


def image_kernels(host):
    names = host.check_output("ls /boot").split()
    return sorted(name[len("vmlinuz-") :] for name in names if name.startswith("vmlinuz-"))


@pytest.fixture(scope="module")
def message(host):
    """The role's failure message, as prepare's rescue recorded it, with its folding undone."""
    recorded = host.file(MESSAGE)
    assert recorded.exists, "prepare's driver did not fail: the role installed the open 550 driver"
    return " ".join(recorded.content_string.split())


@pytest.fixture(scope="module")
def after_failure(host):
    return json.loads(host.file(AFTER_FAILURE).content_string)


def test_the_message_names_driver_kernel_and_compiler_error(host, message):
    (kernel,) = image_kernels(host)
    assert message.startswith(
        "h100: the DKMS build of NVIDIA driver 550.163.01 (nvidia-current-open, Debian package "
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


def test_the_failure_left_the_packages_as_before(after_failure):
    assert after_failure["audit"] == ""
    installed = set(after_failure["installed"])
    # What the failed run had installed, the DKMS tool and the headers included, went again.
    for package in ("nvidia-open-kernel-dkms", "firmware-nvidia-gsp", "nvidia-smi", "dkms", "linux-headers-amd64"):
        assert package not in installed, package
    assert "openssh-server" in installed, "the recorded package list is the node's"
    # Nothing of the driver is held (os_baseline's kernel holds stay).
    assert [p for p in after_failure["holds"] if "nvidia" in p] == []
    assert "linux-image-amd64" in after_failure["holds"]
    # apt worked: the half-configured package no longer poisoned every install.
    assert after_failure["simulate_rc"] == 0


def test_nothing_of_the_failed_driver_is_left_after_converge(host):
    # converge installed 535 over the failure with no cleanup in between.
    assert not host.file("/var/lib/dkms/nvidia-current-open").exists
    assert not host.package("nvidia-open-kernel-dkms").is_installed
    assert host.check_output("dpkg --audit") == ""
