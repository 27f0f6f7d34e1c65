"""The driver role's verdict on a node read again after converge (module_utils driver_verify): each failure's
sentence, what a container or a GPU-less node cannot show, and the passed line, as verify.yml's Jinja wrote them
before (the Molecule scenarios assert the same lines on bench nodes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from nested import changed

from ansible_collections.gpuops.bringup.plugins.module_utils import driver_verify, nvidia_smi

SMI = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"

KERNEL = "6.1.0-50-amd64"
# The driver of the HGX H100 capture the GPU read comes from (tests/fixtures/nvidia_smi, SOURCES.md).
VERSION = "565.57.01"
PLAN = {
    "version": VERSION,
    "track": "NVIDIA's debian12 repository",
    "dkms_module": "nvidia-current",
    "packages": {"nvidia-kernel-dkms": "565.57.01-1", "nvidia-persistenced": "565.57.01-1"},
}
HELD = {name: {"installed": version, "held": True, "broken": False} for name, version in PLAN["packages"].items()}
UNITS = {
    "nvidia-persistenced.service": {"enabled": True, "active": True},
    "nvidia-fabricmanager.service": {"enabled": True, "active": True},
}


def gpu_read(capture, expected_count=8):
    """gpu_facts' gpu for a capture, as the module builds it (parser, then findings)."""
    query = nvidia_smi.parse_query_xml((SMI / capture).read_text())
    return {
        "devices": query["devices"],
        "findings": nvidia_smi.findings(query, expected_count=expected_count),
        "driver_version": query["driver_version"],
        "simulated": None,
    }


GPU = gpu_read("h100-sxm-x8-565.derived.xml")
READS = {
    "driver": {
        "dkms": [{"module": "nvidia-current", "version": VERSION, "kernel": KERNEL, "state": "installed"}],
        "kernels": {KERNEL: {"dkms_modules": {"nvidia-current": {"missing": []}}}},
        "loaded": {"version": VERSION, "flavor": "proprietary"},
        "devices": ["/dev/nvidiactl", "/dev/nvidia0"],
    },
    "os": {"units": UNITS, "packages": {"broken": []}, "capabilities": {"own_kernel": True}},
    "packages": HELD,
    "gpu": GPU,
    "audit": "",
    "pci_gpus": [{"address": "0000:18:00.0"}],
}
FABRICMANAGER = {"package": "nvidia-fabricmanager-565", "version": "565.57.01-1"}


def verdict(live=True, nvswitch=True, dcgm=None, services=None, **changes):
    reads = changed(READS, **changes)
    return driver_verify.verify(
        host="h100",
        plan=PLAN,
        flavor="proprietary",
        kernels={"targets": [KERNEL], "skipped": []},
        live=live,
        fabricmanager=FABRICMANAGER if nvswitch else None,
        dcgm=dcgm,
        persistenced={"wanted": True, "unit": "nvidia-persistenced.service"},
        services=["nvidia-fabricmanager.service"] if services is None else services,
        reads=reads,
    )


def test_a_converged_live_node_passes_with_every_detail():
    found = verdict(dcgm={"version": "1:4.4.1-1", "cuda": [12]})
    assert (found["failures"], found["not_applicable"]) == ([], [])
    assert found["passed"] == (
        "h100 passed nvidia_driver verification: driver 565.57.01 (NVIDIA's debian12 repository, proprietary kernel "
        f"modules), DKMS module nvidia-current installed for kernel(s) {KERNEL}, 2 packages held at their versions, "
        "fabric manager nvidia-fabricmanager-565 565.57.01-1 enabled and running, DCGM 1:4.4.1-1 (CUDA 12 plugins) "
        "enabled and running, 8 GPU(s) NVIDIA H100 80GB HBM3, NVSwitch fabric Completed on every GPU"
    )


def test_a_container_node_says_what_it_cannot_show():
    simulated = {**GPU, "simulated": {"profile": "hgx_h100_8gpu"}, "driver_version": "550.54.15"}
    found = verdict(live=False, gpu=simulated, os__capabilities={"own_kernel": False},
                    os__units={k: {**v, "active": False} for k, v in UNITS.items()})  # fmt: skip
    assert found["failures"] == []
    assert found["not_applicable"] == [
        "loading the module and running nvidia-persistenced and nvidia-fabricmanager (this node's kernel belongs to "
        "its container host)",
        "the driver version nvidia-smi reports (550.54.15, replayed from another machine's capture): the module it "
        "talks to is not this install's",
    ]
    assert found["passed"].endswith(
        "fabric manager nvidia-fabricmanager-565 565.57.01-1 enabled, 8 GPU(s) NVIDIA H100 80GB HBM3 [SIMULATED "
        "hgx_h100_8gpu], NVSwitch fabric Completed on every GPU (not applicable: loading the module and running "
        "nvidia-persistenced and nvidia-fabricmanager (this node's kernel belongs to its container host); the driver "
        "version nvidia-smi reports (550.54.15, replayed from another machine's capture): the module it talks to is "
        "not this install's)"
    )


def test_a_node_without_gpus_or_a_reachable_driver():
    unreached = {"devices": [], "findings": [{"code": "driver_unreachable"}], "driver_version": None}
    found = verdict(live=False, nvswitch=False, services=[], gpu=unreached, pci_gpus=[])
    assert found["failures"] == []
    assert found["not_applicable"] == [
        "loading the module (no NVIDIA GPU on the PCI bus)",
        "the GPU check (nvidia-smi cannot reach a driver on this node)",
    ]
    assert "GPU(s)" not in found["passed"] and "fabric manager" not in found["passed"]


@pytest.mark.parametrize(
    ("changes", "failure"),
    [
        ({"driver__dkms": []}, f"DKMS has not installed nvidia-current {VERSION} for kernel(s) {KERNEL}"),
        # Another module at the plan's version, or the plan's module only built: not the plan's installed module.
        ({"driver__dkms": [{"module": "nvidia-open", "version": VERSION, "kernel": KERNEL, "state": "installed"}]},
         f"DKMS has not installed nvidia-current {VERSION} for kernel(s) {KERNEL}"),
        ({"driver__dkms": [{"module": "nvidia-current", "version": VERSION, "kernel": KERNEL, "state": "built"}]},
         f"DKMS has not installed nvidia-current {VERSION} for kernel(s) {KERNEL}"),
        (
            {"driver__kernels": {KERNEL: {"dkms_modules": {"nvidia-current": {"missing": ["nvidia.ko"]}}}}},
            "module files missing under /lib/modules/<kernel> (DKMS's directory: updates/dkms, or extra on RHEL) for "
            f"kernel(s) {KERNEL}",
        ),
        ({"os__packages": {"broken": ["nvidia-kernel-dkms"]}}, "packages left half-installed: nvidia-kernel-dkms"),
        ({"audit": "  The following packages are only half configured\n"},
         "dpkg --audit reports: The following packages are only half configured"),
        ({"os__units": {**UNITS, "nvidia-persistenced.service": {"enabled": False, "active": True}}},
         "nvidia-persistenced is not enabled"),
        ({"os__units": {**UNITS, "nvidia-fabricmanager.service": {"enabled": True, "active": False}}},
         "nvidia-fabricmanager is not running"),
        ({"driver__loaded": {"version": None, "flavor": None}},
         f"the loaded NVIDIA module is none (unknown), not {VERSION} (proprietary)"),
        ({"driver__devices": []}, "no /dev/nvidiactl although the driver is loaded"),
        ({"gpu__driver_version": "550.54.15"}, f"nvidia-smi reports driver 550.54.15, not {VERSION}"),
    ],
    ids=["not_built", "other_module", "built_only", "files_missing", "broken", "audit", "persistenced_disabled",
         "fabricmanager_stopped", "nothing_loaded", "no_nvidiactl", "smi_version"],
)  # fmt: skip
def test_each_failure_says_what_is_wrong(changes, failure):
    assert verdict(**changes)["failures"] == [failure]


def test_a_package_not_held_is_the_plans_package_problem():
    packages = {**HELD, "nvidia-persistenced": {**HELD["nvidia-persistenced"], "held": False}}
    assert verdict(packages=packages)["failures"] == ["nvidia-persistenced is not held"]


def test_a_long_audit_is_cut_at_a_word():
    found = verdict(audit="word " * 100)["failures"]
    assert len(found) == 1 and found[0].endswith("word...") and len(found[0]) <= len("dpkg --audit reports: ") + 300


def test_daemons_failed_where_the_driver_cannot_run_yet():
    units = {k: {**v, "active": False, "failed": True} for k, v in UNITS.items()}
    found = verdict(live=False, os__units=units)
    assert found["failures"] == [
        "nvidia-persistenced is failed (the system reports itself degraded)",
        "nvidia-fabricmanager is failed (the system reports itself degraded)",
    ]


def test_a_gpu_fault_is_reported_where_nvidia_smi_answers():
    # A real capture of an HGX H100 with one GPU gone: nvidia-smi answers, so its problem is a failure.
    found = verdict(gpu=gpu_read("h100-sxm-x8-565-gpu3-missing.derived.xml"))["failures"]
    assert found == ["nvidia-smi: nvidia-smi sees 7 GPUs; this node should have 8"]


def test_a_failed_daemon_where_the_driver_runs_is_one_that_does_not_run():
    units = {**UNITS, "nvidia-fabricmanager.service": {"enabled": True, "active": False, "failed": True}}
    assert verdict(os__units=units)["failures"] == ["nvidia-fabricmanager is not running"]


def test_a_kernel_the_plan_does_not_build_for_is_not_judged():
    # Preflight's read, which stands in for a second one where the run changed nothing, covers every installed
    # kernel; only the targets must carry the module's files.
    other = "6.1.0-9-amd64"
    kernels = {
        KERNEL: {"dkms_modules": {"nvidia-current": {"missing": []}}},
        other: {"dkms_modules": {"nvidia-current": {"missing": ["nvidia.ko"]}}},
    }
    assert verdict(driver__kernels=kernels)["failures"] == []
    kernels[KERNEL] = kernels[other]
    assert verdict(driver__kernels=kernels)["failures"] == [
        "module files missing under /lib/modules/<kernel> (DKMS's directory: updates/dkms, or extra on RHEL) for "
        f"kernel(s) {KERNEL}"
    ]
