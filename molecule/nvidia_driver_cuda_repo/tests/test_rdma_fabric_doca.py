"""rdma_fabric with DOCA-OFED on this scenario's node, whose driver (NVIDIA's debian12 repository, a DKMS build) came
first: stage 3 as on a rack. The stage gets Molecule's gates here, run by the fixture once: check mode on the node
without DOCA (honest: it reports the repository and install it would make, and passes), a converge, a second run
that changes nothing, check mode on the converged node that changes nothing. The tests then read the real state
(DOCA's repository through the mirror, the profile and OFED's kernel modules held, OFED's DKMS build, the driver's
DKMS build redone after it). An OFED update that rebuilds OFED's modules later takes the same path (the build order
is judged from the files' times each run: tests/unit/plugins/module_utils/test_rdma_fabric.py).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

# The HGX node (DOCA is its stage 3 here); cp is the control plane test_upgrade.py drains it through, l40s the PCIe
# node (test_pcie.py).
testinfra_hosts = ["h100"]
LIMIT = ["--limit", "h100"]

PROFILE = ("doca-ofed", "2.9.0-1")
OFED = ("mlnx-ofed-kernel-dkms", "24.10.OFED.24.10.0.7.0.1-1")
USER_SPACE = ["rdma-core", "ibverbs-providers", "ibverbs-utils", "infiniband-diags", "perftest"]
REPOSITORY = "http://gpuops-mirror:8080/linux.mellanox.com/public/repo/doca/2.9.0/debian12.5/x86_64/"
DRIVER = ("nvidia-current", "550.144.03")
STATE = "/var/lib/gpuops/rdma_fabric/state.json"
PLAYBOOK = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "rdma_fabric_doca.yml"
REBUILD = "Rebuild the driver's DKMS modules after OFED's"
RECAP = re.compile(r"h100\s*: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0")


def task_changed(task, output):
    """Whether the task reported a change on h100 (its diff, with --diff, comes before the status)."""
    return re.search(re.escape(task) + r"\] \*+ (?:(?!TASK \[).)*?changed: \[h100\]", output) is not None


def changed(status, output):
    """The node's changed count of a run that must have passed."""
    assert status == 0, output[-3000:]
    found = RECAP.search(output)
    assert found, output[-3000:]
    return int(found.group(1))


@pytest.fixture(scope="module")
def doca(stage_run):
    """Stage 3 with DOCA, through Molecule's gates; returns the converge's output."""
    status, output = stage_run(PLAYBOOK, "all", [*LIMIT, "--check", "--diff"])
    assert changed(status, output) > 0
    assert task_changed("Add NVIDIA's DOCA repository", output), output[-3000:]
    status, converge = stage_run(PLAYBOOK, "all", LIMIT)
    assert changed(status, converge) > 0
    assert changed(*stage_run(PLAYBOOK, "all", LIMIT)) == 0, "second run"
    assert changed(*stage_run(PLAYBOOK, "all", [*LIMIT, "--check", "--diff"])) == 0, "check mode on the converged node"
    return converge


def image_kernels(host):
    """The kernels the node boots: those with an image under /boot (the container's running one is not)."""
    names = host.check_output("ls /boot").split()
    return sorted(name[len("vmlinuz-") :] for name in names if name.startswith("vmlinuz-"))


def mtime(host, path):
    return float(host.check_output(f"stat -c %.Y {path}"))


def ib_core_and_peermem(host):
    """Per kernel: (OFED's ib_core, the driver's nvidia-peermem) modification times, as DKMS installed them."""
    kernels = image_kernels(host)
    assert kernels, "the node image carries a kernel"
    return {
        kernel: (
            mtime(host, f"/lib/modules/{kernel}/updates/dkms/ib_core.ko"),
            mtime(host, f"/lib/modules/{kernel}/updates/dkms/{DRIVER[0]}-peermem.ko"),
        )
        for kernel in kernels
    }


def test_doca_comes_from_the_release_repository_through_the_mirror(host, doca):
    source = host.file("/etc/apt/sources.list.d/nvidia-doca.sources").content_string
    assert f"URIs: {REPOSITORY}\n" in source, source
    assert "Signed-By: " in source, source
    policy = host.check_output(f"apt-cache policy {PROFILE[0]}")
    assert f"Installed: {PROFILE[1]}" in policy and REPOSITORY.rstrip("/") in policy, policy


def test_profile_ofed_and_user_space_are_held(host, doca):
    held = host.check_output("apt-mark showhold").split()
    for name, version in [PROFILE, OFED]:
        assert host.package(name).version == version, name
    for name in [PROFILE[0], OFED[0], *USER_SPACE]:
        assert host.package(name).is_installed, name
        assert name in held, f"{name} is not held"
    assert host.check_output("dpkg --audit") == ""


def test_ofed_and_the_driver_are_built_by_dkms_driver_last(host, doca):
    assert task_changed(REBUILD, doca), doca[-3000:]
    status = host.check_output("dkms status").splitlines()
    for kernel, (ib_core, peermem) in ib_core_and_peermem(host).items():
        assert f"mlnx-ofed-kernel/24.10.OFED.24.10.0.7.0.1, {kernel}, x86_64: installed" in status, status
        assert f"{DRIVER[0]}/{DRIVER[1]}, {kernel}, x86_64: installed" in status, status
        assert peermem > ib_core, f"{kernel}: nvidia-peermem built before OFED's ib_core"


def test_state_file_records_doca_and_a_usable_peermem(host, doca):
    state = json.loads(host.file(STATE).content_string)
    assert state["stack"] == "doca"
    assert state["peermem"] == {"enabled": True, "module": f"{DRIVER[0]}-peermem", "status": "ready"}
    assert host.file("/etc/modules-load.d/gpuops-rdma-fabric.conf").contains(f"^{DRIVER[0]}-peermem$")
    assert (
        f"h100 passed rdma_fabric verification: stack doca ({2 + len(USER_SPACE)} packages held at their versions, "
        f"DOCA 2.9.0 doca-ofed {PROFILE[1]});" in doca
    )


def test_a_driver_rebuild_dkms_cannot_do_stops_and_a_rerun_recovers(host, doca, stage_run):
    """OFED's modules newer than the driver's build (as after an OFED update) while DKMS has lost the driver's
    source tree: the run stops naming it; with the tree back, the next run redoes the build and passes."""
    host.run_expect([0], f"mv /var/lib/dkms/{DRIVER[0]} /root/dkms-{DRIVER[0]}")
    try:
        for kernel in image_kernels(host):
            host.run_expect([0], f"touch /lib/modules/{kernel}/updates/dkms/ib_core.ko")
        status, output = stage_run(PLAYBOOK, "rdma_fabric", LIMIT)
        assert status != 0, output[-3000:]
        assert (
            f"h100: the driver's modules ({DRIVER[0]}) predate OFED's on {', '.join(image_kernels(host))}, but DKMS "
            f"holds no version of {DRIVER[0]} under /var/lib/dkms to rebuild. Fix: reinstall the driver "
            "(playbooks/nvidia_driver.yml) now that DOCA-OFED is installed, then run again." in output
        ), output[-3000:]
    finally:
        host.run_expect([0], f"mv /root/dkms-{DRIVER[0]} /var/lib/dkms/{DRIVER[0]}")
    status, output = stage_run(PLAYBOOK, "rdma_fabric", LIMIT)
    assert task_changed(REBUILD, output), output[-3000:]
    assert changed(status, output) > 0
    assert all(peermem > ib_core for ib_core, peermem in ib_core_and_peermem(host).values())
