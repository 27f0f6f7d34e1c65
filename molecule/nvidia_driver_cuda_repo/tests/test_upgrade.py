"""The upgrade path on this scenario's node, last (it changes the driver every test before it read): the pin moves
from 550.144.03 to 550.163.01, the other 550 version of the stand-in of NVIDIA's repository. Check mode first, which
must report the upgrade and touch neither the node nor the cluster; then the upgrade: cordoned and drained through
the Kubernetes API of the bench's stand-in control plane (cp), GPU services stopped, driver and fabric manager
replaced in lockstep (DKMS really builds the stand-in's modules, after DOCA's OFED), and the node put back in service
after verification; a second run changes nothing.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import time
from pathlib import Path

import pytest

testinfra_hosts = ["h100"]

OLD, NEW = "550.144.03", "550.163.01"
PACKAGES = ["nvidia-kernel-dkms", "firmware-nvidia-gsp", "nvidia-smi", "libcuda1", "libnvidia-cfg1",
            "libnvidia-ml1", "nvidia-persistenced", "nvidia-fabricmanager-550"]  # fmt: skip
CONVERGE = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml"
KUBECTL = "kubectl --kubeconfig /etc/kubernetes/admin.conf"
# The stand-in API server's record of every change to a Node (tests/bench/kube_apiserver.py).
CHANGES = "/var/lib/gpuops-standin/apiserver/changes.jsonl"
# h100 only: the PCIe node (l40s) stays on the old version.
UPGRADE = [
    "--limit", "h100", "-e", f"nvidia_driver_version={NEW}", "-e", "gpuops_serial=1",
    "-e", "nvidia_driver_drain=kubernetes",
    "-e", f"nvidia_driver_kubeconfig={os.environ['MOLECULE_EPHEMERAL_DIRECTORY']}/admin.conf",
]  # fmt: skip
RECAP = re.compile(r"h100\s*: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0")


def node_changes(cp, since):
    changes = [json.loads(line) for line in cp.file(CHANGES).content_string.splitlines()]
    return [c for c in changes if c["time"] >= since and c["path"] == "/api/v1/nodes/h100"]


def versions(host):
    return {package: host.check_output(f"dpkg-query -W -f '${{Version}}' {package}") for package in PACKAGES}


@pytest.fixture(scope="module")
def cp(host):
    return host.get_host("ansible://cp", ansible_inventory=host.backend.ansible_inventory)


@pytest.fixture(scope="module")
def check_run(host, cp, stage_run):
    """The upgrade in check mode: (its output, the package versions before and after, the Node's changes)."""
    before, started = versions(host), time.time()
    status, output = stage_run(CONVERGE, "all", ["--check", "--diff", *UPGRADE])
    assert status == 0, output[-4000:]
    return output, before, versions(host), node_changes(cp, started)


@pytest.fixture(scope="module")
def upgrade(host, cp, stage_run, check_run):
    """The upgrade itself, after check mode: (its output, the Node's changes during it)."""
    started = time.time()
    status, output = stage_run(CONVERGE, "all", UPGRADE)
    assert status == 0, output[-4000:]
    return output, node_changes(cp, started)


def test_check_mode_reports_the_upgrade_and_changes_nothing(check_run):
    output, before, after, changes = check_run
    assert int(RECAP.search(output).group(1)) > 0, output[-3000:]
    plan = f"h100: upgrade from nvidia-kernel-dkms {OLD}-1 (driver {OLD}) to driver {NEW} (nvidia-kernel-dkms {NEW}-1)"
    assert plan in output, output[-4000:]
    assert before == after == dict.fromkeys(PACKAGES, f"{OLD}-1")
    assert changes == [], "check mode cordoned the node"


def dpkg_installed_at(host, package):
    """When dpkg last marked the package installed (its log's local time: UTC in the bench's containers)."""
    lines = [line for line in host.file("/var/log/dpkg.log").content_string.splitlines()
             if f" status installed {package}:" in line]  # fmt: skip
    assert lines, f"dpkg.log has no installation of {package}"
    stamp = " ".join(lines[-1].split()[:2])
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.UTC).timestamp()


def test_the_node_was_drained_before_the_install_and_returned_after(host, cp, upgrade):
    output, changes = upgrade
    assert "cordon and drain Kubernetes node h100" in output, output[-4000:]
    # In order through the stand-in API server: cordoned (unschedulable) before the new driver was installed, put
    # back in service after it was (and verified).
    assert [c["body"]["spec"]["unschedulable"] for c in changes] == [True, False], changes
    installed = dpkg_installed_at(host, "nvidia-kernel-dkms")
    # dpkg.log has whole seconds: the install happened within the second after its stamp.
    assert changes[0]["time"] < installed + 1 and installed < changes[1]["time"], (changes, installed)
    node = json.loads(cp.check_output(f"{KUBECTL} get node h100 -o json"))
    assert not node["spec"].get("unschedulable")


def test_driver_and_fabric_manager_moved_together_and_are_held(host, upgrade):
    output = upgrade[0]
    assert f"h100 passed nvidia_driver verification: driver {NEW} (NVIDIA's debian12 repository," in output
    assert f"fabric manager nvidia-fabricmanager-550 {NEW}-1 enabled," in output
    assert versions(host) == dict.fromkeys(PACKAGES, f"{NEW}-1")
    assert set(PACKAGES) <= set(host.check_output("apt-mark showhold").split())
    # DCGM stays at its own pin (the driver's CUDA major version is the same), held.
    assert host.check_output("dpkg-query -W -f '${Version}' datacenter-gpu-manager-4-cuda12") == "1:4.2.3-1"
    assert "datacenter-gpu-manager-4-cuda12" in host.check_output("apt-mark showhold").split()
    for unit in ["nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm"]:
        assert host.service(unit).is_enabled, unit
        assert host.run(f"systemctl is-failed {unit}").stdout.strip() != "failed", unit
    assert host.check_output("dpkg --audit") == ""


def test_dkms_holds_only_the_new_driver_build(host, upgrade):
    builds = [line for line in host.check_output("dkms status").splitlines() if line.startswith("nvidia-current/")]
    kernels = sorted(name[len("vmlinuz-") :] for name in host.check_output("ls /boot").split()
                     if name.startswith("vmlinuz-"))  # fmt: skip
    assert builds == [f"nvidia-current/{NEW}, {kernel}, x86_64: installed" for kernel in kernels]


def test_a_second_run_finds_nothing_to_upgrade(upgrade, stage_run):
    status, output = stage_run(CONVERGE, "all", ["--limit", "h100", "-e", f"nvidia_driver_version={NEW}"])
    assert status == 0, output[-4000:]
    assert "upgrade from" not in output
    assert int(RECAP.search(output).group(1)) == 0, output[-3000:]
