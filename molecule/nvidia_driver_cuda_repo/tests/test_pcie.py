"""The PCIe node of this scenario (a simulated 4x L40S, no NVSwitch): the driver from NVIDIA's repository as on the
HGX node, but nothing of fabric manager, which only NVSwitch systems run (the role's `auto`).
"""

from __future__ import annotations

import os
from pathlib import Path

testinfra_hosts = ["l40s"]

DEBIAN_VERSION = "550.144.03-1"
DRIVER_PACKAGES = ["nvidia-kernel-dkms", "firmware-nvidia-gsp", "nvidia-smi", "libcuda1", "libnvidia-cfg1",
                   "libnvidia-ml1", "nvidia-persistenced"]  # fmt: skip
CONVERGE = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml"


def test_the_driver_is_installed_at_the_pin_and_held(host):
    held = host.check_output("apt-mark showhold").split()
    for package in DRIVER_PACKAGES:
        assert host.check_output(f"dpkg-query -W -f '${{Version}}' {package}") == DEBIAN_VERSION, package
        assert package in held, package


def test_a_pcie_node_gets_no_fabric_manager(host):
    # The repository carries it (h100 has it from there); nothing of it on an L40S box.
    assert "nvidia-fabricmanager-550" in host.check_output("apt-cache pkgnames nvidia-fabricmanager")
    assert host.check_output("dpkg-query -W -f '${Package} ' 'nvidia-fabricmanager*' 2>/dev/null || true") == ""
    assert host.service("nvidia-persistenced").is_enabled


def test_verification_names_the_four_l40s_and_no_fabric_manager(host, stage_run):
    rc, output = stage_run(CONVERGE, "nvidia_driver_verify", ["--limit", "l40s"])
    assert rc == 0, output[-3000:]
    assert "l40s passed nvidia_driver verification: driver 550.144.03 (NVIDIA's debian12 repository," in output
    # No fabric manager clause between the holds and the GPUs, and no NVSwitch fabric checked.
    assert "packages held at their versions, 4 GPU(s) NVIDIA L40S [SIMULATED pcie_l40s_4gpu] (not applicable:" in output
    assert "this node's kernel belongs to its container host" in output
