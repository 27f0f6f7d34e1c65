"""prepare's driver whose DKMS build fails on l40s (the stand-in's 550.90.07, whose source does not compile against
bookworm's headers: real dkms, make and gcc): the message, the package state the failure left (recorded by prepare
before converge changed it), and converge's 550.144.03 install over it with no cleanup in between (the re-run the
message promises; test_pcie.py checks the result).
"""

from __future__ import annotations

import json
import re

import pytest

testinfra_hosts = ["l40s"]

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
    assert recorded.exists, "prepare's driver did not fail: the role installed 550.90.07"
    return " ".join(recorded.content_string.split())


@pytest.fixture(scope="module")
def after_failure(host):
    return json.loads(host.file(AFTER_FAILURE).content_string)


def test_the_message_names_driver_kernel_and_compiler_error(host, message):
    (kernel,) = image_kernels(host)
    assert message.startswith(
        "l40s: the DKMS build of NVIDIA driver 550.90.07 (nvidia-current, Debian package nvidia-kernel-dkms "
        f"550.90.07-1, proprietary kernel modules) failed for kernel {kernel} (make exit code 2, 1 compiler error(s)):"
    ), message
    assert "error: too few arguments to function 'pci_resize_resource'" in message, message
    assert f"Whole log: {LOG_DIR}/nvidia-current-550.90.07-{kernel}.make.log." in message


def test_the_message_says_what_was_rolled_back_and_the_fix(message):
    assert re.search(r"The \d+ package\(s\) this run installed were purged again \(", message), message
    assert "dpkg --audit reports no broken package." in message
    assert "Fix: a driver that builds against this kernel (" in message
    assert "another nvidia_driver_version or nvidia_driver_flavor), or a kernel this driver supports" in message
    assert "then run again, no cleanup needed." in message


def test_the_whole_build_log_is_kept(host):
    (kernel,) = image_kernels(host)
    log = host.file(f"{LOG_DIR}/nvidia-current-550.90.07-{kernel}.make.log")
    # As make wrote it: gcc's quotes follow the node's locale.
    assert log.contains("error: too few arguments to function .pci_resize_resource.")


def test_the_failure_left_the_packages_as_before(after_failure):
    assert after_failure["audit"] == ""
    installed = set(after_failure["installed"])
    # What the failed run had installed, the DKMS tool and the headers included, went again.
    for package in ("nvidia-kernel-dkms", "firmware-nvidia-gsp", "nvidia-smi", "dkms", "linux-headers-amd64"):
        assert package not in installed, package
    assert "openssh-server" in installed, "the recorded package list is the node's"
    # Nothing of the driver is held (os_baseline's kernel holds stay).
    assert [p for p in after_failure["holds"] if "nvidia" in p] == []
    assert "linux-image-amd64" in after_failure["holds"]
    # apt worked: the half-configured package no longer poisoned every install.
    assert after_failure["simulate_rc"] == 0


def test_nothing_of_the_failed_driver_is_left_after_converge(host):
    # converge installed 550.144.03 over the failure with no cleanup in between.
    assert not host.file("/var/lib/dkms/nvidia-current/550.90.07").exists
    assert not host.file("/usr/src/nvidia-current-550.90.07").exists
    assert host.check_output("dpkg-query -W -f '${Version}' nvidia-kernel-dkms") == "550.144.03-1"
    assert host.check_output("dpkg --audit") == ""
