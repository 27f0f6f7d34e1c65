"""DCGM's decisions in the driver role: which CUDA major version's plugins a driver needs (at and around each
minor-version-compatibility minimum, and the GPUs CUDA 13 dropped), and the one version of every package at the pin
(the installed one kept, the newest build otherwise, each way the repository can fall short)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.bringup.plugins.module_utils import driver_plan

ROOT = Path(__file__).resolve().parents[4]
WHERE = "NVIDIA's CUDA repository (https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/)"
PLAN = {"version": "550.144.03", "kmod_package": "nvidia-kernel-dkms", "package_version": "550.144.03-1"}
CORE = ["datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary"]
CUDA12 = ["datacenter-gpu-manager-4-cuda12", "datacenter-gpu-manager-4-proprietary-cuda12"]
CUDA13 = ["datacenter-gpu-manager-4-cuda13", "datacenter-gpu-manager-4-proprietary-cuda13"]


def index(names, versions):
    return {name: list(versions) for name in names}


def one_line(text):
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("driver", "architectures", "majors"),
    [
        ("450.80.01", ["ampere"], []),
        ("450.80.02", ["ampere"], [11]),
        ("525.60.12", ["ampere"], [11]),
        ("525.60.13", ["ampere"], [12]),
        ("550.144.03", ["hopper"], [12]),
        ("579.99.99", ["volta"], [12]),
        ("580", ["hopper"], [13]),
        ("580.95.05", ["hopper", "hopper"], [13]),
        ("580.95.05", ["volta"], [12, 13]),
        ("580.95.05", ["pascal", "ampere"], [12, 13]),
        ("580.95.05", ["maxwell"], [12, 13]),
        ("580.95.05", ["turing"], [13]),
        ("580.95.05", [], [13]),
    ],
)
def test_the_plugins_follow_the_drivers_cuda_major_version(driver, architectures, majors):
    assert driver_plan.dcgm_cuda_majors(driver, architectures) == majors


def test_every_package_at_the_newest_build_of_the_pin():
    found = driver_plan.choose_dcgm(
        index(CORE + CUDA12, ["1:4.2.3-1", "1:4.4.1-1", "1:4.4.1-2"]), {}, PLAN, "4.4.1", ["hopper"], WHERE
    )
    assert found == {"packages": dict.fromkeys(CORE + CUDA12, "1:4.4.1-2"), "cuda": [12], "problem": None}


def test_the_installed_build_of_the_pin_is_kept():
    info = {name: {"installed": "1:4.4.1-1"} for name in CORE + CUDA12}
    found = driver_plan.choose_dcgm(index(CORE + CUDA12, ["1:4.4.1-1", "1:4.4.1-2"]), info, PLAN, "4.4.1", [], WHERE)
    assert found["packages"] == dict.fromkeys(CORE + CUDA12, "1:4.4.1-1")


def test_packages_installed_at_two_builds_move_to_the_newest():
    info = {name: {"installed": "1:4.4.1-1"} for name in CORE} | {name: {"installed": "1:4.4.1-2"} for name in CUDA12}
    found = driver_plan.choose_dcgm(index(CORE + CUDA12, ["1:4.4.1-1", "1:4.4.1-2"]), info, PLAN, "4.4.1", [], WHERE)
    assert found["packages"] == dict.fromkeys(CORE + CUDA12, "1:4.4.1-2")


def test_an_installed_other_version_is_replaced_by_the_pin():
    info = {name: {"installed": "1:4.2.3-1"} for name in CORE + CUDA12}
    found = driver_plan.choose_dcgm(index(CORE + CUDA12, ["1:4.2.3-1", "1:4.4.1-1"]), info, PLAN, "4.4.1", [], WHERE)
    assert found["packages"] == dict.fromkeys(CORE + CUDA12, "1:4.4.1-1")


def test_a_pascal_node_on_a_cuda_13_driver_gets_both_plugin_sets():
    plan = {**PLAN, "version": "580.95.05"}
    found = driver_plan.choose_dcgm(index(CORE + CUDA12 + CUDA13, ["1:4.4.1-1"]), {}, plan, "4.4.1", ["pascal"], WHERE)
    assert (found["cuda"], sorted(found["packages"])) == ([12, 13], sorted(CORE + CUDA12 + CUDA13))


def test_a_version_the_repository_lacks_names_what_it_carries():
    found = driver_plan.choose_dcgm(index(CORE + CUDA12, ["1:4.2.3-1", "1:4.4.1-1"]), {}, PLAN, "4.5.0", [], WHERE)
    assert found["packages"] == {}
    assert one_line(found["problem"]) == (
        f"nvidia_driver_dcgm_version is 4.5.0, for driver 550.144.03 (CUDA 12 plugins), but {WHERE} carries "
        f"{', '.join(CORE + CUDA12)} at no version 4.5.0; it carries datacenter-gpu-manager-4-core at 4.2.3, 4.4.1. "
        "Fix: one of those versions in nvidia_driver_dcgm_version, or bring DCGM 4.5.0 into the repository (the "
        "mirror: copy it from NVIDIA's), or nvidia_driver_dcgm: false."
    )


def test_plugins_missing_for_the_drivers_cuda_major_are_named():
    plan = {**PLAN, "version": "580.95.05"}
    found = driver_plan.choose_dcgm(index(CORE + CUDA12, ["1:4.4.1-1"]), {}, plan, "4.4.1", ["hopper"], WHERE)
    assert f"but {WHERE} carries {', '.join(CUDA13)} at no version 4.4.1;" in one_line(found["problem"])
    assert "(CUDA 13 plugins)" in found["problem"]


def test_builds_that_do_not_line_up_are_a_problem():
    carried = index(CORE, ["1:4.4.1-1"]) | index(CUDA12, ["1:4.4.1-2"])
    found = driver_plan.choose_dcgm(carried, {}, PLAN, "4.4.1", [], WHERE)
    assert f"{WHERE} carries no one build of 4.4.1 for all of {', '.join(CORE + CUDA12)};" in one_line(found["problem"])


def test_a_driver_older_than_any_dcgm_4_plugin():
    old = {**PLAN, "version": "418.226.00"}
    found = driver_plan.choose_dcgm(index(CORE, ["1:4.4.1-1"]), {}, old, "4.4.1", [], WHERE)
    assert (found["packages"], found["cuda"]) == ({}, [])
    assert one_line(found["problem"]) == (
        "DCGM 4 has packages for the CUDA 11, 12, 13 drivers; driver 418.226.00 is older than any (CUDA 11 needs "
        "450.80.02). Fix: a newer driver (nvidia_driver_branch), or nvidia_driver_dcgm: false."
    )


def test_rpm_versions_resolve_the_same_way():
    found = driver_plan.choose_dcgm(
        index(CORE + CUDA12, ["1:4.4.1-1", "1:4.2.3-1"]), {}, PLAN, "4.4.1", ["hopper"], WHERE, manager="dnf"
    )
    assert found["packages"] == dict.fromkeys(CORE + CUDA12, "1:4.4.1-1")


def test_the_role_reads_every_package_the_decision_may_name():
    names = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "vars" / "main.yml").read_text())[
        "__nvidia_driver_dcgm_names"
    ]
    expected = list(driver_plan.DCGM_CORE) + [
        name.format(major) for major in driver_plan.DCGM_CUDA_MAJORS for name in driver_plan.DCGM_PER_CUDA
    ]
    assert names == expected
