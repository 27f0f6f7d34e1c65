"""The inventory_check action, run by ansible-playbook on the controller against real inventory files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
FIX = "see inventory/group_vars/hgx_h100_8gpu.yml for a complete profile"
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
