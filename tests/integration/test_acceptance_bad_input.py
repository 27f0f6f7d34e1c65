"""The acceptance stage's bad input fails in preflight, before any node is read or any result written: a profile
naming an unknown check, a gate of the wrong type, a required check that cannot apply, a system serial that is none,
a results directory that cannot take the results (not writable, a file on its path, inside an installed collection),
each with its message.

The variable cases run as one ansible-playbook --check on the machine running the tests (each case a host); the
results directory is checked once per run, so each of its cases is a run of its own.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from preflight_harness import ROOT, CaseRun, local_cases, unfold

PLAYBOOK = Path(__file__).with_name("acceptance_preflight.yml")
TAG = "acceptance_preflight"
H100 = {
    "profile": "hgx_h100_8gpu",
    "gpu": {"count": 8, "model": "NVIDIA H100 80GB HBM3", "nvswitch": True, "architecture": "hopper", "nvlinks": 18},
    "infiniband": {"ports": 8, "rate_gbps": 400, "link_layer": "InfiniBand"},
}


def profile(**changes):
    return {"gpuops_hardware": {**H100, **changes}}


CASES = {
    "unknown_check_in_profile": (
        profile(acceptance={"required": ["gpu.count", "gpu.burn_in"]}),
        "gpuops_hardware.acceptance.required names 'gpu.burn_in', no check of the acceptance stage; known: gpu.count,",
    ),
    "gate_as_text": (
        profile(gates={"nccl_all_reduce_busbw_gbps": "460 GB/s"}),
        "gpuops_hardware.gates.nccl_all_reduce_busbw_gbps is '460 GB/s': expected a number above 0 (single-node "
        "all_reduce_perf bus bandwidth (GB/s) at the largest message size), unquoted",
    ),
    "gate_unknown": (
        profile(gates={"allreduce": 460}),
        "gpuops_hardware.gates.allreduce is no gate; known: nccl_all_reduce_busbw_gbps, ib_write_bw_gbps",
    ),
    "vbios_policy_unknown": (
        profile(firmware={"vbios_drift": "ignore"}),
        "gpuops_hardware.firmware.vbios_drift is 'ignore': expected warn or fail",
    ),
    "dcgm_level_out_of_range": (
        profile(acceptance={"dcgm_level": 5}),
        "gpuops_hardware.acceptance.dcgm_level is 5: the DCGM diagnostic level the profile's acceptance runs, 0 to 4, "
        "unquoted (1 by default; 3 for a delivery acceptance)",
    ),
    "required_id_unknown": (
        {**profile(), "acceptance_required": ["gpu.count", "dcgm.level3"]},
        "acceptance_required names 'dcgm.level3', no check of the acceptance stage",
    ),
    "optional_not_a_list": (
        {**profile(), "acceptance_optional": "nccl.single_node"},
        "acceptance_optional is 'nccl.single_node': expected a list of check ids, e.g. [gpu.count, driver.version]",
    ),
    "required_check_that_cannot_apply": (
        {**profile(gpu={**H100["gpu"], "nvswitch": False}), "acceptance_required": ["gpu.count", "gpu.fabric"]},
        "gpu.fabric is required but does not apply to profile hgx_h100_8gpu (the profile has no NVSwitch): it would "
        "never pass. Fix: take it out of the required checks.",
    ),
    "nccl_required_without_a_gate": (
        {**profile(gpu={**H100["gpu"], "count": 4}), "acceptance_required": ["gpu.count", "nccl.single_node"]},
        "nccl.single_node is required, but profile hgx_h100_8gpu has no bus bandwidth gate (no published one for its "
        "GPU model and count). Fix: set gpuops_hardware.gates.nccl_all_reduce_busbw_gbps, or add nccl.single_node to "
        "acceptance_optional.",
    ),
    # The node's serial from the rack manifest (or set by hand): its grammar, its type, and a list asking for it.
    "system_serial_with_a_space": (
        {**profile(), "gpuops_system_serial": "SN 0001"},
        "gpuops_system_serial is 'SN 0001': not a system serial (letters, digits, '.', '_', '/' or '-', starting with "
        "a letter or digit, at most 64). Fix: copy it as the chassis label shows it (the rack manifest's serial column "
        "sets it), or leave it unset to skip inventory.system_serial.",
    ),
    "system_serial_unquoted": (
        {**profile(), "gpuops_system_serial": 83},
        "gpuops_system_serial is 83, not text. Fix: quote it as the chassis label shows it",
    ),
    "system_serial_required_without_one": (
        {**profile(), "acceptance_required": ["gpu.count", "inventory.system_serial"]},
        "inventory.system_serial is required, but gpuops_system_serial is not set for this node: it would never be "
        "compared.",
    ),
}


@pytest.fixture(scope="module")
def case_run(tmp_path_factory) -> CaseRun:
    hosts = local_cases({case: variables for case, (variables, _expected) in CASES.items()})
    # A good node beside the bad ones: it passes its own checks and the run goes on to where the results go.
    hosts["good"] = local_cases({"good": profile()})["good"]
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("cases"), hosts)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_in_preflight(case_run: CaseRun, case: str) -> None:
    _variables, expected = CASES[case]
    case_run.assert_fails_with(case, [expected])


def test_a_good_node_beside_them_reaches_the_results_check(case_run: CaseRun) -> None:
    assert case_run.result["stats"]["good"]["failures"] == 0
    # The results check runs once, for the hosts still in the play.
    assert "(check mode: nothing will be written)" in case_run.output


def preflight(tmp_path: Path, **variables) -> subprocess.CompletedProcess:
    inventory = tmp_path / "inventory.json"
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "gpuops_hardware": H100}
    inventory.write_text(json.dumps({"all": {"hosts": {"node-1": {**host, **variables}}}}))
    return subprocess.run(
        ["ansible-playbook", "-v", "--inventory", str(inventory), "--check", "--tags", TAG, str(PLAYBOOK)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_site_yml_stops_on_bad_acceptance_input_before_stage_1(tmp_path):
    """In site.yml the acceptance stage's inputs are checked first: an unknown required check stops the node in the
    run's first play, before stage 1 (with no host left, the run ends there). --check and the preflight tag keep the
    run to the controller-side checks, whatever happens; the inventory is no rack's (its check is skipped)."""
    inventory = tmp_path / "inventory.json"
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "gpuops_hardware": H100,
            "acceptance_required": ["gpu.count", "gpu.burn_in"]}  # fmt: skip
    inventory.write_text(json.dumps({"all": {"hosts": {"node-1": host}}}))
    proc = subprocess.run(
        ["ansible-playbook", "--inventory", str(inventory), "--check", "--tags", TAG, "--skip-tags", "gpuops_inventory",
         "playbooks/site.yml"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode != 0, output[-3000:]
    failed = output.index("acceptance_required names 'gpu.burn_in', no check of the acceptance stage")
    assert output.index("PLAY [Inputs of every stage, before any stage changes a node]") < failed, output[-3000:]
    # No host is left: the run ends there, before stage 1's play.
    assert "PLAY [Stage 1: OS baseline]" not in output, output[-3000:]
    assert re.search(r"node-1 : ok=\d+ changed=0 unreachable=0 failed=1 ", output), output[-3000:]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        # The kernel refuses writes under /proc/sys to root too (os.access asks it).
        ("/proc/sys/gpuops-reports", "acceptance_results_dir is '/proc/sys/gpuops-reports', but /proc/sys is not "
                                     "writable for user root. Fix: give a directory this user may write"),
        ("{tmp}/a-file/reports", "acceptance_results_dir is '{tmp}/a-file/reports', but {tmp}/a-file is a file. Fix: "
                                 "give a directory."),
        ("{tmp}/collections/ansible_collections/gpuops/bringup/reports",
         "inside an installed collection ({tmp}/collections/ansible_collections/gpuops/bringup/reports): results there "
         "are lost with the collection's next install. Fix: give a directory of the site's"),
        ("reports", 'acceptance_results_dir is "reports": not an absolute path of one line'),
    ],
)  # fmt: skip
def test_a_results_directory_that_cannot_take_the_results_stops_the_run(tmp_path, where, expected):
    (tmp_path / "a-file").write_text("")
    proc = preflight(tmp_path, acceptance_results_dir=where.format(tmp=tmp_path))
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode != 0, output[-3000:]
    assert unfold(expected.format(tmp=tmp_path)) in output, output[-3000:]
    assert not list(tmp_path.glob("**/run.json"))


def test_the_default_results_directory_is_beside_the_inventorys(tmp_path):
    site = tmp_path / "site" / "inventory"
    site.mkdir(parents=True)
    proc = preflight(site)
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode == 0, output[-3000:]
    assert "new run 20" in output and f"{tmp_path}/site/reports/20" in output, output[-3000:]
    assert not (tmp_path / "site" / "reports").exists()
