"""The rack inventory contract: every problem names the host, the variable, the value and the fix."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpuops.bringup.plugins.module_utils import hardware_profiles
from ansible_collections.gpuops.bringup.plugins.module_utils.inventory_schema import (
    FIX,
    check_hardware,
    check_inventory,
    check_play,
    node_hosts,
)

ROOT = Path(__file__).resolve().parents[4]
GROUP_VARS = ROOT / "inventory" / "group_vars"
# The profiles the collection ships, and the bench's own (defined whole in its group_vars).
PROFILES = {
    **hardware_profiles.BUILTIN,
    **{
        p.stem: yaml.safe_load(p.read_text())["gpuops_hardware"]
        for p in GROUP_VARS.glob("*.yml")
        if "gpuops_hardware" in p.read_text()
    },
}
H100 = hardware_profiles.BUILTIN["hgx_h100_8gpu"]
L40S = hardware_profiles.BUILTIN["pcie_l40s_4gpu"]
MISSING = object()


def changed(hardware, dotted, value):
    """A copy of hardware with one key set, or removed when value is MISSING."""
    hardware = copy.deepcopy(hardware)
    *parents, last = dotted.split(".")
    target = hardware
    for part in parents:
        target = target[part]
    if value is MISSING:
        del target[last]
    else:
        target[last] = value
    return hardware


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_shipped_profiles_are_valid(profile):
    hardware = PROFILES[profile]
    assert hardware["profile"] == profile
    assert check_hardware(f"host {profile}-node", hardware) == []


@pytest.mark.parametrize(
    ("dotted", "value", "problems"),
    [
        (
            "profile",
            "HGX-H100",
            [
                "gpuops_hardware.profile is 'HGX-H100', "
                "expected the profile group's name (lower case, digits, underscores)"
            ],
        ),
        ("profile", MISSING, ["gpuops_hardware.profile is missing"]),
        ("gpu.model", MISSING, ["gpuops_hardware.gpu.model is missing"]),
        ("gpu.model", 100, ["gpuops_hardware.gpu.model is 100, expected the product name nvidia-smi reports"]),
        (
            "gpu.architecture",
            "grace",
            [
                "gpuops_hardware.gpu.architecture is 'grace', "
                "expected one of volta, turing, ampere, ada, hopper, blackwell, none"
            ],
        ),
        ("gpu.count", 17, ["gpuops_hardware.gpu.count is 17, expected an integer from 0 to 16"]),
        ("gpu.count", "8", ["gpuops_hardware.gpu.count is '8', expected an integer from 0 to 16"]),
        ("gpu.count", -1, ["gpuops_hardware.gpu.count is -1, expected an integer from 0 to 16"]),
        ("gpu.nvswitch", "yes", ["gpuops_hardware.gpu.nvswitch is 'yes', expected true or false"]),
        ("infiniband.ports", 33, ["gpuops_hardware.infiniband.ports is 33, expected an integer from 0 to 32"]),
        (
            "infiniband.rate_gbps",
            300,
            [
                "gpuops_hardware.infiniband.rate_gbps is 300, "
                "expected one of 0, 10, 20, 25, 40, 50, 56, 100, 200, 400, 800"
            ],
        ),
        (
            "infiniband.link_layer",
            "RoCE",
            ["gpuops_hardware.infiniband.link_layer is 'RoCE', expected InfiniBand or Ethernet"],
        ),
        (
            "gpu",
            8,
            [
                "gpuops_hardware.gpu.model is missing",
                "gpuops_hardware.gpu.architecture is missing",
                "gpuops_hardware.gpu.count is missing",
                "gpuops_hardware.gpu.nvswitch is missing",
            ],
        ),
    ],
)
def test_check_hardware_field_problems(dotted, value, problems):
    assert check_hardware("host a01-gpu01", changed(H100, dotted, value)) == [
        f"host a01-gpu01: {problem}; {FIX}" for problem in problems
    ]


@pytest.mark.parametrize("count", [0, 1])
def test_nvswitch_needs_several_gpus(count):
    assert check_hardware("host a01-gpu01", changed(H100, "gpu.count", count)) == [
        f"host a01-gpu01: gpuops_hardware.gpu.nvswitch is true with gpu.count {count}; "
        "NVSwitch systems carry 4 or 8 GPUs: fix the count or set nvswitch: false"
    ]


@pytest.mark.parametrize("hardware", ["hgx_h100_8gpu", ["hgx_h100_8gpu"]])
def test_hardware_must_be_a_mapping(hardware):
    assert check_hardware("host a01-gpu01", hardware) == [
        f"host a01-gpu01: gpuops_hardware is {hardware!r}, expected a mapping; "
        "put the host in a profile group instead (hgx_h100_8gpu, hgx_h200_8gpu, pcie_l40s_4gpu) or define the "
        "mapping whole (see plugins/module_utils/hardware_profiles.py for complete profiles)"
    ]


def host(groups, hardware=H100, **variables):
    return {"group_names": groups, "gpuops_hardware": hardware, **variables}


@pytest.mark.parametrize(
    ("hosts", "problems"),
    [
        (
            {
                "n1": host(["hgx_h100_8gpu", "rack_a"], ansible_host="10.0.0.1"),
                "n2": host(["pcie_l40s_4gpu", "rack_a"], L40S, ansible_host="10.0.0.2"),
            },
            [],
        ),
        (
            {"n1": host(["hgx_h100_8gpu"])},
            ["host n1 is in 0 rack groups (none); put it in exactly one group named rack_<id>"],
        ),
        (
            {"n1": host(["hgx_h100_8gpu", "rack_a", "rack_b"])},
            ["host n1 is in 2 rack groups (rack_a, rack_b); put it in exactly one group named rack_<id>"],
        ),
        # Unset, or the profile filter's {} (no profile group).
        *[
            (
                {"n1": host(["rack_a"], none)},
                [
                    "host n1 has no hardware profile: add it to one hardware profile group, a profile the collection "
                    "ships (hgx_h100_8gpu, hgx_h200_8gpu, pcie_l40s_4gpu) or one of gpuops_hardware_profiles"
                ],
            )
            for none in (None, {})
        ],
        # Set as a host variable instead of through the profile group.
        (
            {"n1": host(["rack_a"])},
            [
                "host n1: gpuops_hardware.profile is 'hgx_h100_8gpu' but the host is not in group 'hgx_h100_8gpu'; "
                "assign hardware profiles through group membership, not host variables"
            ],
        ),
        (
            {
                "n1": host(["hgx_h100_8gpu", "pcie_l40s_4gpu", "rack_a"], L40S, ansible_host="10.0.0.1"),
                "n2": host(["hgx_h100_8gpu", "rack_a"], ansible_host="10.0.0.2"),
            },
            [
                "host n1 is in several hardware profile groups (hgx_h100_8gpu, pcie_l40s_4gpu); "
                "a host has exactly one profile: remove it from all but one"
            ],
        ),
        (
            {
                "n1": host(["hgx_h100_8gpu", "rack_a"], ansible_host="10.0.0.1"),
                "n2": host(["hgx_h100_8gpu", "rack_a"], ansible_host="10.0.0.1", ansible_port=22),
                "n3": host(["hgx_h100_8gpu", "rack_a"], ansible_host="10.0.0.1", ansible_port=2222),
            },
            ["hosts n1, n2 all connect to 10.0.0.1:22; each host needs its own ansible_host (or ansible_port)"],
        ),
        # A host whose profile is broken is reported once, for the profile.
        (
            {"n1": host(["hgx_h100_8gpu", "rack_a"], changed(H100, "gpu.count", 17))},
            [f"host n1: gpuops_hardware.gpu.count is 17, expected an integer from 0 to 16; {FIX}"],
        ),
    ],
)
def test_check_inventory(hosts, problems):
    assert check_inventory(hosts)[0] == problems


def test_only_host_in_two_profile_groups_is_reported():
    problems, _summary = check_inventory(
        {"n1": host(["bench_container", "hgx_h100_8gpu", "rack_a"])},
        profile_groups={"bench_container", "hgx_h100_8gpu"},
    )
    assert problems == [
        "host n1 is in several hardware profile groups (bench_container, hgx_h100_8gpu); "
        "a host has exactly one profile: remove it from all but one"
    ]


def test_summary_counts_hosts_racks_and_profiles():
    _problems, summary = check_inventory(
        {
            "n2": host(["hgx_h100_8gpu", "rack_b"], ansible_host="10.0.0.2"),
            "n1": host(["hgx_h100_8gpu", "rack_a"], ansible_host="10.0.0.1"),
            "n3": host(["pcie_l40s_4gpu", "rack_a"], L40S, ansible_host="10.0.0.3"),
        }
    )
    assert summary == {
        "hosts": 3,
        "racks": {"rack_a": ["n1", "n3"], "rack_b": ["n2"]},
        "profiles": {"hgx_h100_8gpu": ["n1", "n2"], "pcie_l40s_4gpu": ["n3"]},
    }


def inventory_hosts(inventory, env):
    """check_inventory's input for an inventory file, as ansible-inventory resolves it (group_vars included)."""
    proc = subprocess.run(
        ["ansible-inventory", "-i", str(inventory), "--list"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)

    def members(group):
        entry = listing.get(group, {})
        found = set(entry.get("hosts", []))
        for child in entry.get("children", []):
            found |= members(child)
        return found

    groups = [g for g in listing if g not in ("_meta", "all")]
    hostvars = listing["_meta"]["hostvars"]
    found = {
        name: {
            "group_names": sorted(g for g in groups if name in members(g)),
            **{key: variables.get(key) for key in ("gpuops_hardware", "ansible_host", "ansible_port")},
            "overrides": variables.get("gpuops_hardware_overrides"),
        }
        for name, variables in hostvars.items()
        # As inventory_check: the control plane stage 4 joins is no rack node.
        if name not in members("kube_control_plane")
    }
    # ansible-inventory leaves templates as they are: the collection's default (a template calling the
    # hardware_profile filter, in the inventory's group_vars/all/hardware.yml) is resolved as the filter resolves it.
    for data in found.values():
        overrides = data.pop("overrides")
        if isinstance(data["gpuops_hardware"], str) and "gpuops.bringup.hardware_profile" in data["gpuops_hardware"]:
            data["gpuops_hardware"] = hardware_profiles.resolve(data["group_names"], None, overrides)
    return found


@pytest.mark.parametrize(
    ("inventory", "summary"),
    [
        (
            "local.yml",
            {
                "hosts": 3,
                "racks": {"rack_local": ["gpu-node-01", "gpu-node-02", "gpu-node-03"]},
                "profiles": {"hgx_h100_8gpu": ["gpu-node-01", "gpu-node-03"], "pcie_l40s_4gpu": ["gpu-node-02"]},
            },
        ),
        (
            "example.yml",
            {
                "hosts": 12,
                "racks": {
                    "rack_a01": ["a01-gpu01", "a01-gpu02", "a01-gpu03", "a01-gpu04", "a01-inf01", "a01-inf02"],
                    "rack_a02": ["a02-gpu01", "a02-gpu02", "a02-gpu03", "a02-gpu04", "a02-inf01", "a02-inf02"],
                },
                "profiles": {
                    "hgx_h100_8gpu": ["a01-gpu01", "a01-gpu02", "a01-gpu03", "a01-gpu04"],
                    "hgx_h200_8gpu": ["a02-gpu01", "a02-gpu02", "a02-gpu03", "a02-gpu04"],
                    "pcie_l40s_4gpu": ["a01-inf01", "a01-inf02", "a02-inf01", "a02-inf02"],
                },
            },
        ),
    ],
)
def test_shipped_inventories_keep_the_contract(ansible_env, inventory, summary):
    assert check_inventory(inventory_hosts(ROOT / "inventory" / inventory, ansible_env)) == ([], summary)


def test_broken_inventory_reports_each_problem(ansible_env, broken_inventory):
    problems, _summary = check_inventory(inventory_hosts(broken_inventory, ansible_env))
    assert problems == [
        *(
            f"host a02-gpu0{n}: gpuops_hardware.gpu.count is 18, expected an integer from 0 to 16; {FIX}"
            for n in range(1, 5)
        ),
        "host a02-inf02 is in 0 rack groups (none); put it in exactly one group named rack_<id>",
        "host a01-gpu01 is in several hardware profile groups (hgx_h100_8gpu, pcie_l40s_4gpu); "
        "a host has exactly one profile: remove it from all but one",
    ]


@pytest.mark.parametrize(
    ("dotted", "value", "problem"),
    [
        ("gates", {"nccl_all_reduce_busbw_gbps": "460"},
         "gpuops_hardware.gates.nccl_all_reduce_busbw_gbps is '460': expected a number above 0"),
        ("acceptance", {"required": ["gpu.count", "gpu.burn_in"]},
         "gpuops_hardware.acceptance.required names 'gpu.burn_in', no check of the acceptance stage"),
        ("firmware", {"hca_drift": "error"}, "gpuops_hardware.firmware.hca_drift is 'error': expected warn or fail"),
    ],
)  # fmt: skip
def test_the_acceptance_keys_are_part_of_the_contract(dotted, value, problem):
    """Every stage's inventory check refuses a bad gate or check id before any node is touched."""
    problems = check_hardware("host gpu01", changed(H100, dotted, value))
    assert len(problems) == 1 and problems[0].startswith(f"host gpu01: {problem}"), problems


def test_a_play_of_some_hosts_is_stopped_by_their_problems_only():
    hosts = {
        "n1": host(["hgx_h100_8gpu", "rack_a"], ansible_host="10.0.0.1"),
        "n2": host(["hgx_h100_8gpu"], ansible_host="10.0.0.2"),
        "n3": host(["hgx_h100_8gpu", "rack_a"], ansible_host="10.0.0.1"),
        "n4": host(["hgx_h100_8gpu", "rack_a"], ansible_host="10.0.0.4"),
    }
    rack = "host n2 is in 0 rack groups (none); put it in exactly one group named rack_<id>"
    clash = "hosts n1, n3 all connect to 10.0.0.1:22; each host needs its own ansible_host (or ansible_port)"
    assert check_play(hosts, (), ["n4"])[:2] == ([], [rack, clash])
    assert check_play(hosts, (), ["n3", "n4"])[:2] == ([clash], [rack])
    assert check_play(hosts, (), ["n2"])[:2] == ([rack], [clash])
    assert check_play(hosts, ())[:2] == ([rack, clash], []) == (check_inventory(hosts)[0], [])


@pytest.mark.parametrize(
    ("groups", "pattern"),
    [
        ({"all": ["n1"], "ungrouped": ["n1"]}, "all"),
        ({"all": ["n1", "cp"], "kube_control_plane": ["cp"]}, "all:!kube_control_plane"),
        # An empty group is still a group: naming it draws no warning, and it leaves out nothing.
        ({"all": ["n1"], "kube_control_plane": []}, "all:!kube_control_plane"),
        # A group whose name only contains the control plane's is another group.
        ({"all": ["n1"], "kube_control_plane_old": ["n1"]}, "all"),
    ],
)
def test_node_hosts(groups, pattern):
    assert node_hosts(groups) == pattern
