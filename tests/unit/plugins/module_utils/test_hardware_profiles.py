"""Which hardware profile a host gets: its one profile group's, the site's own profiles and overrides merged in."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import hardware_profiles
from ansible_collections.gpuops.bringup.plugins.module_utils.inventory_schema import check_hardware

H100 = hardware_profiles.BUILTIN["hgx_h100_8gpu"]
SITE = {"gb200_nvl": {"description": "site", "gpu": {"model": "NVIDIA GB200", "architecture": "blackwell", "count": 4,
                                                     "nvswitch": True},
                      "infiniband": {"ports": 4, "rate_gbps": 400, "link_layer": "InfiniBand"}}}  # fmt: skip


@pytest.mark.parametrize("name", sorted(hardware_profiles.BUILTIN))
def test_every_shipped_profile_is_named_after_its_key_and_valid(name):
    profile = hardware_profiles.BUILTIN[name]
    assert profile["profile"] == name
    assert check_hardware(f"profile {name}", profile) == []


def test_the_profile_of_the_one_profile_group():
    assert hardware_profiles.resolve(["rack_a01", "hgx_h100_8gpu"]) == H100
    assert hardware_profiles.resolve(("pcie_l40s_4gpu",))["gpu"]["model"] == "NVIDIA L40S"


@pytest.mark.parametrize("groups", [[], None, ["rack_a01"], ["rack_a01", "hgx_h100_8gpu", "pcie_l40s_4gpu"]])
def test_no_profile_group_or_several_is_no_profile(groups):
    assert hardware_profiles.resolve(groups) == {}


def test_a_group_named_twice_is_one_profile_group():
    assert hardware_profiles.resolve(["hgx_h100_8gpu", "hgx_h100_8gpu"]) == H100


def test_overrides_merge_key_by_key_and_lists_replace():
    overrides = {"gpu": {"count": 4}, "firmware": {"vbios": ["96.00.74.00.01"]}, "gates": {"nccl_pair_busbw_gbps": 150}}
    profile = hardware_profiles.resolve(["hgx_h100_8gpu"], None, overrides)
    assert profile["gpu"] == {**H100["gpu"], "count": 4}
    assert profile["firmware"] == {"vbios_drift": "warn", "vbios": ["96.00.74.00.01"]}
    assert profile["gates"] == {"nccl_pair_busbw_gbps": 150}
    # A value replaces a mapping, and a mapping a value.
    assert hardware_profiles.resolve(["hgx_h100_8gpu"], None, {"firmware": "none"})["firmware"] == "none"
    assert hardware_profiles.merged({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}


def test_the_shipped_profiles_are_not_changed_by_a_host():
    before = copy.deepcopy(hardware_profiles.BUILTIN)
    profile = hardware_profiles.resolve(["hgx_h100_8gpu"], None, {"gpu": {"count": 1}})
    profile["infiniband"]["ports"] = 0
    overrides = {"firmware": {"vbios": ["1"]}}
    hardware_profiles.resolve(["hgx_h100_8gpu"], None, overrides)["firmware"]["vbios"].append("2")
    assert before == hardware_profiles.BUILTIN and overrides == {"firmware": {"vbios": ["1"]}}


def test_a_site_profile_is_named_after_its_group_and_may_replace_a_shipped_one():
    assert hardware_profiles.resolve(["gb200_nvl"], SITE) == {**SITE["gb200_nvl"], "profile": "gb200_nvl"}
    replaced = hardware_profiles.resolve(["hgx_h100_8gpu"], {"hgx_h100_8gpu": SITE["gb200_nvl"]})
    assert replaced["gpu"]["model"] == "NVIDIA GB200" and replaced["profile"] == "hgx_h100_8gpu"
    assert hardware_profiles.resolve(["gb200_nvl", "hgx_h100_8gpu"], SITE) == {}
    assert sorted(hardware_profiles.profiles(SITE)) == ["gb200_nvl", *sorted(hardware_profiles.BUILTIN)]


@pytest.mark.parametrize("site", [None, [], "gb200_nvl", {"gb200_nvl": "not a mapping"}])
def test_site_profiles_of_another_shape_add_nothing(site):
    assert hardware_profiles.resolve(["gb200_nvl"], site) == {}
    assert hardware_profiles.resolve(["hgx_h100_8gpu"], site) == H100


@pytest.mark.parametrize("overrides", [None, [], "count: 4"])
def test_overrides_of_another_shape_change_nothing(overrides):
    assert hardware_profiles.resolve(["hgx_h100_8gpu"], None, overrides) == H100
