"""The inventory_check action, run by ansible-playbook on the controller against real inventory files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
FIX = "see plugins/module_utils/hardware_profiles.py for complete profiles"
PLAYBOOK = """\
- name: Check the inventory
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Check the inventory
      gpuops.bringup.inventory_check:
        hosts: "{{ check_hosts | default(omit) }}"
"""


@pytest.fixture
def check(tmp_path, ansible_env):
    """Run the action with an inventory; return (rc, the task's result on localhost)."""
    playbook = tmp_path / "check.yml"
    playbook.write_text(PLAYBOOK)

    def run(inventory, extra_vars=None):
        proc = subprocess.run(
            ["ansible-playbook", "-i", str(inventory), str(playbook), "-e", json.dumps(extra_vars or {})],
            cwd=ROOT,
            env=ansible_env,
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            output = json.loads(proc.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"ansible-playbook printed no JSON (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc.returncode, output["plays"][0]["tasks"][0]["hosts"]["localhost"]

    return run


def test_example_inventory_is_well_formed(check):
    rc, result = check(ROOT / "inventory" / "example.yml")
    assert rc == 0
    assert result["changed"] is False
    assert result["msg"] == "12 hosts in 2 rack(s), 3 hardware profile(s): inventory is well-formed"
    assert result["problems"] == []


def test_broken_inventory_fails_with_every_problem(check, broken_inventory):
    rc, result = check(broken_inventory)
    assert rc == 2
    assert result["failed"] is True
    problems = [
        *(
            f"host a02-gpu0{n}: gpuops_hardware.gpu.count is 18, expected an integer from 0 to 16; {FIX}"
            for n in range(1, 5)
        ),
        "host a02-inf02 is in 0 rack groups (none); put it in exactly one group named rack_<id>",
        "host a01-gpu01 is in several hardware profile groups (hgx_h100_8gpu, pcie_l40s_4gpu); "
        "a host has exactly one profile: remove it from all but one",
    ]
    assert result["problems"] == problems
    assert result["msg"] == "the inventory breaks the rack inventory contract in 6 place(s):\n- " + "\n- ".join(
        problems
    )


def test_checking_some_hosts_only(check, broken_inventory):
    rc, result = check(broken_inventory, {"check_hosts": ["a01-inf01", "a02-inf01"]})
    assert rc == 0
    assert result["msg"] == "2 hosts in 2 rack(s), 1 hardware profile(s): inventory is well-formed"


def test_unknown_host_is_named(check):
    rc, result = check(ROOT / "inventory" / "example.yml", {"check_hosts": ["a01-gpu01", "a03-gpu01"]})
    assert rc == 2
    assert result["msg"] == "host a03-gpu01 is not in the inventory"


def test_lone_host_in_two_profile_groups_is_reported(check, tmp_path):
    # A one-node lab: neither profile group has another host, so only the
    # group_vars files tell that both groups define a profile.
    inventory = tmp_path / "lab" / "hosts.yml"
    inventory.parent.mkdir()
    (inventory.parent / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
    inventory.write_text(
        "all:\n  children:\n    rack_lab:\n      hosts:\n        lab01:\n"
        "    bench_container:\n      hosts:\n        lab01:\n    hgx_h100_8gpu:\n      hosts:\n        lab01:\n"
    )
    rc, result = check(inventory)
    assert rc == 2
    assert result["problems"] == [
        "host lab01 is in several hardware profile groups (bench_container, hgx_h100_8gpu); "
        "a host has exactly one profile: remove it from all but one"
    ]


def lab(tmp_path, groups, site_vars):
    """A one-node lab inventory with the collection's profile default (the bench's group_vars/all) and site vars."""
    inventory = tmp_path / "lab" / "hosts.yml"
    (inventory.parent / "group_vars" / "all").mkdir(parents=True)
    (inventory.parent / "group_vars" / "all" / "hardware.yml").symlink_to(
        ROOT / "playbooks" / "group_vars" / "all" / "hardware.yml"
    )
    (inventory.parent / "group_vars" / "all" / "site.yml").write_text(json.dumps(site_vars))
    inventory.write_text(json.dumps({"all": {"children": {g: {"hosts": {"lab01": None}} for g in groups}}}))
    return inventory


def test_a_site_profile_and_an_override_are_checked(check, tmp_path):
    """The site's own profile (gpuops_hardware_profiles) is a profile group like the collection's; an override
    merged into it is checked like any value."""
    b200 = {"description": "HGX B200", "gpu": {"model": "NVIDIA B200", "architecture": "blackwell", "count": 8,
                                               "nvswitch": True},
            "infiniband": {"ports": 8, "rate_gbps": 400, "link_layer": "InfiniBand"}}  # fmt: skip
    profiles = {"gpuops_hardware_profiles": {"hgx_b200_8gpu": b200}}
    rc, result = check(lab(tmp_path, ["rack_lab", "hgx_b200_8gpu"], profiles))
    assert (rc, result["problems"], result["summary"]["profiles"]) == (0, [], {"hgx_b200_8gpu": ["lab01"]})
    site = {"gpuops_hardware_profiles": {"hgx_b200_8gpu": b200}, "gpuops_hardware_overrides": {"gpu": {"count": 18}}}
    rc, result = check(lab(tmp_path / "2", ["rack_lab", "hgx_b200_8gpu", "hgx_h100_8gpu"], site))
    assert rc == 2
    assert result["problems"] == [
        "host lab01 is in several hardware profile groups (hgx_b200_8gpu, hgx_h100_8gpu); "
        "a host has exactly one profile: remove it from all but one"
    ]
    rc, result = check(lab(tmp_path / "3", ["rack_lab", "hgx_b200_8gpu"], site))
    assert rc == 2
    assert result["problems"] == [
        f"host lab01: gpuops_hardware.gpu.count is 18, expected an integer from 0 to 16; {FIX}"
    ]


LIMITED = """\
- name: A stage on the rack's nodes
  hosts: all
  gather_facts: false
  tasks:
    - name: Check the inventory
      gpuops.bringup.inventory_check:
      run_once: true
"""


def test_a_limited_run_is_stopped_by_its_own_nodes_problems_only(tmp_path, ansible_env, broken_inventory):
    """--limit to a sound node of the broken inventory: the other hosts' problems are warnings and the play goes on;
    --limit to a broken node: its problem alone fails it."""
    playbook = tmp_path / "stage.yml"
    playbook.write_text(LIMITED)

    def run(limit):
        proc = subprocess.run(["ansible-playbook", "-i", str(broken_inventory), "--limit", limit, str(playbook)],
                              cwd=ROOT, env=ansible_env, capture_output=True, text=True, check=False)  # fmt: skip
        task = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]
        return proc.returncode, next(iter(task.values()))

    rc, result = run("a01-gpu02")
    assert (rc, result["problems"]) == (0, [])
    # The six of the whole inventory (above): four H200 nodes, one in no rack, one in two profiles.
    assert len(result["elsewhere"]) == 6 and any("host a02-gpu01" in w for w in result["warnings"])
    assert all(
        w.startswith("a host this run leaves out breaks the rack inventory contract: ") for w in result["warnings"]
    )
    rc, result = run("a02-gpu01")
    assert rc == 2
    assert result["problems"] == [
        f"host a02-gpu01: gpuops_hardware.gpu.count is 18, expected an integer from 0 to 16; {FIX}"
    ]
