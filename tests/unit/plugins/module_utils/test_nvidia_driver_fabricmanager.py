"""Fabric manager's decisions: its package at exactly the driver's version, and what verification reports from
gpu_facts on real nvidia-smi captures of HGX H100/H200 nodes (tests/fixtures/nvidia_smi, SOURCES.md), healthy and
with the faults (a GPU gone, fabric not Completed, fabric completed with an error status).

The verify phase fails with exactly these sentences (module_utils driver_verify, which roles/nvidia_driver/tasks/
verify.yml calls through the filter nvidia_driver_verify, joins them after "nvidia-smi: "): testing the function on
the parser's output of the fault captures covers each fault without a bench node per fault.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, driver_plan, nvidia_smi

SMI = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"
PLAN = {
    "version": "535.274.02",
    "kmod_package": "nvidia-tesla-535-kernel-dkms",
    "package_version": "535.274.02-1~deb13u1",
}
WHERE = "NVIDIA's CUDA repository (https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/)"
# What the bench's stand-in repository carries (tests/standins/cuda-repo-debian12/repo.json).
INDEX = {"nvidia-fabricmanager-535": ["535.261.03-1", "535.274.02-1", "535.288.01-1", "535.309.01-1"]}


def gpu(capture, expected_count=8):
    """gpu_facts' answer for a capture, as gpu_facts builds it (parser, then findings)."""
    query = nvidia_smi.parse_query_xml((SMI / capture).read_text())
    return {"devices": query["devices"], "findings": nvidia_smi.findings(query, expected_count=expected_count)}


def one_line(text):
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("branch", "package"),
    [("535", "nvidia-fabricmanager-535"), ("575", "nvidia-fabricmanager-575"), ("580", "nvidia-fabricmanager")],
)
def test_the_package_is_per_branch_until_r580(branch, package):
    assert driver_plan.fabricmanager_package(branch) == package


def test_fabric_manager_takes_exactly_the_driver_version():
    result = driver_plan.choose_fabricmanager(INDEX, {}, PLAN, "535", WHERE)
    assert result == {"package": "nvidia-fabricmanager-535", "version": "535.274.02-1", "problem": None}


def test_the_newest_revision_of_the_driver_version_wins_and_an_installed_one_stays():
    index = {"nvidia-fabricmanager-535": ["535.274.02-1", "535.274.02-2"]}
    fresh = driver_plan.choose_fabricmanager(index, {}, PLAN, "535", WHERE)
    assert fresh["version"] == "535.274.02-2"
    kept = driver_plan.choose_fabricmanager(
        index, {"nvidia-fabricmanager-535": {"installed": "535.274.02-1"}}, PLAN, "535", WHERE
    )
    assert kept["version"] == "535.274.02-1"


def test_an_installed_fabric_manager_of_another_version_is_replaced_by_the_driver_version():
    info = {"nvidia-fabricmanager-535": {"installed": "535.261.03-1"}}
    assert driver_plan.choose_fabricmanager(INDEX, info, PLAN, "535", WHERE)["version"] == "535.274.02-1"


def test_a_repository_without_the_driver_version_names_both_versions_and_the_fix():
    plan = {**PLAN, "version": "535.216.03", "kmod_package": "nvidia-tesla-535-kernel-dkms",
            "package_version": "535.216.03-3~deb12u1"}  # fmt: skip
    result = driver_plan.choose_fabricmanager(INDEX, {}, plan, "535", WHERE)
    assert result["version"] is None
    problem = one_line(result["problem"])
    assert (
        "fabric manager must run at exactly the driver's version, 535.216.03 (nvidia-tesla-535-kernel-dkms "
        "535.216.03-3~deb12u1), but NVIDIA's CUDA repository (https://developer.download.nvidia.com/compute/cuda/"
        "repos/debian12/x86_64/) carries nvidia-fabricmanager-535 only at 535.261.03, 535.274.02, 535.288.01, "
        "535.309.01"
    ) in problem
    assert (
        "Fix: a driver version the repository has fabric manager for (nvidia_driver_version, with "
        'nvidia_driver_branch: "535")' in problem
    )
    assert "nvidia_driver_fabricmanager: false" in problem


def test_a_repository_without_the_package_says_so():
    problem = driver_plan.choose_fabricmanager({}, {}, PLAN, "535", WHERE)["problem"]
    assert "carries nvidia-fabricmanager-535 only at no version" in one_line(problem)


def test_a_healthy_hgx_h100_passes():
    assert driver_plan.gpu_problems(gpu("h100-sxm-x8-565.derived.xml"), fabric=True) == []


def test_a_missing_gpu_fails():
    problems = driver_plan.gpu_problems(gpu("h100-sxm-x8-565-gpu3-missing.derived.xml"), fabric=True)
    assert problems == ["nvidia-smi sees 7 GPUs; this node should have 8"]


def test_fabric_in_progress_fails_once_for_all_gpus_with_their_addresses():
    problems = driver_plan.gpu_problems(gpu("h100-sxm-x8-565-fabric-in-progress.derived.xml"), fabric=True)
    assert len(problems) == 1, problems
    assert problems[0].startswith(
        "NVSwitch fabric registration not complete on 8 of 8 GPU(s) (state In Progress: 00000000:18:00.0,"
    ), problems
    assert "until nvidia-fabricmanager, at the driver's version, has registered them" in problems[0]


def test_fabric_completed_with_an_error_status_fails():
    problems = driver_plan.gpu_problems(gpu("h200-sxm-550-fabric-insufficient.derived.xml", 1), fabric=True)
    assert len(problems) == 1, problems
    assert "not complete on 1 of 1 GPU(s) (state Completed, status Insufficient Resources:" in problems[0]


def test_without_fabric_manager_the_fabric_findings_speak_for_themselves():
    problems = driver_plan.gpu_problems(gpu("h100-sxm-x8-565-fabric-in-progress.derived.xml"), fabric=False)
    assert len(problems) == 8
    assert all("NVSwitch fabric registration is In Progress, not Completed" in p for p in problems)


def test_a_gpu_that_reports_no_fabric_state_on_an_nvswitch_node_fails():
    facts = gpu("h100-sxm-x8-565.derived.xml")
    facts["devices"][0]["fabric"] = None
    problems = driver_plan.gpu_problems(facts, fabric=True)
    assert problems and "1 of 8 GPU(s) (no NVSwitch fabric state: 00000000:18:00.0)" in problems[0]


def test_the_packages_index_gives_each_name_its_versions():
    text = (
        "Package: nvidia-fabricmanager-535\nVersion: 535.274.02-1\nArchitecture: amd64\n\n"
        "Package: cuda-keyring\nVersion: 1.1-1\n\n"
        "Package: nvidia-fabricmanager-535\nVersion: 535.309.01-1\nDescription: x\n more\n"
    )
    index = apt.parse_packages_index(text, ["nvidia-fabricmanager-535", "nvidia-fabricmanager"])
    assert index == {"nvidia-fabricmanager-535": ["535.274.02-1", "535.309.01-1"], "nvidia-fabricmanager": []}
