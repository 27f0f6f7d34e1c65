"""The rack_manifest inventory plugin through Ansible itself: ansible-inventory's graph and list of a manifest, the
stages' inventory check on what it makes, and a bad manifest or configuration refused with every problem's line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "rack_manifest"


def ansible(*args, cwd=ROOT):
    """An Ansible command with the repository's configuration (its collection path; a source that does not parse
    fails the run) and no colour."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=120)


def plain(value):
    """A listed value as it was set: ansible-inventory shows the plugin's strings marked unsafe (never templated)."""
    if isinstance(value, dict):
        return (
            value["__ansible_unsafe"] if set(value) == {"__ansible_unsafe"} else {k: plain(v) for k, v in value.items()}
        )
    return value


def source(tmp_path, manifest, settings="", name="hall1.rack_manifest.yml"):
    """A plugin configuration beside a copy of the manifest (which the configuration names relative to itself)."""
    shutil.copy(FIXTURES / manifest, tmp_path / manifest)
    config = tmp_path / name
    config.write_text(f"plugin: gpuops.bringup.rack_manifest\nmanifest: {manifest}\n{settings}")
    return config


def test_the_graph_and_the_list_of_a_handover(tmp_path):
    config = source(tmp_path, "handover.csv")
    graph = ansible("ansible-inventory", "-i", str(config), "--graph")
    assert graph.returncode == 0, graph.stderr
    groups = {}
    for line in graph.stdout.splitlines():
        name = line.strip(" |-")
        if name.startswith("@"):
            group = groups.setdefault(name[1:].rstrip(":"), [])
        elif name:
            group.append(name)
    assert groups["rack_a01"] == ["a01-gpu01", "a01-gpu02"]
    assert groups["rack_a02"] == ["a02-gpu01", "a02-inf01"]
    assert groups["hgx_h100_8gpu"] == ["a01-gpu01", "a01-gpu02"]
    assert groups["hgx_h200_8gpu"] == ["a02-gpu01"] and groups["pcie_l40s_4gpu"] == ["a02-inf01"]
    listed = ansible("ansible-inventory", "-i", str(config), "--list")
    assert listed.returncode == 0, listed.stderr
    hostvars = plain(json.loads(listed.stdout)["_meta"]["hostvars"])
    assert hostvars["a01-gpu01"] == {
        "ansible_host": "10.20.1.11", "gpuops_rack": "A01", "gpuops_rack_unit": 3,
        "gpuops_system_serial": "1S2X9F0001", "gpuops_bmc_address": "10.30.1.11",
    }  # fmt: skip
    assert hostvars["a02-inf01"]["gpuops_system_serial"] == "0123"


def test_a_spreadsheet_export_through_the_plugin_s_options_and_constructed_groups(tmp_path):
    settings = (
        'delimiter: ";"\n'
        "columns: {hostname: Host Name, address: Mgmt IP, u: RU, serial: Serial Number, bmc: iDRAC IP}\n"
        "groups:\n  top_of_rack: gpuops_rack_unit > 10\n"
        "compose:\n  ansible_user: \"'ops'\"\n"
    )
    config = source(tmp_path, "spreadsheet-export.csv", settings)
    listed = ansible("ansible-inventory", "-i", str(config), "--list")
    assert listed.returncode == 0, listed.stderr
    data = plain(json.loads(listed.stdout))
    assert data["rack_b01"]["hosts"] == ["b01-gpu01", "b01-gpu02"]
    assert data["top_of_rack"]["hosts"] == ["b01-gpu02"]
    assert data["_meta"]["hostvars"]["b01-gpu02"]["ansible_user"] == "ops"
    assert "gpuops_bmc_address" not in data["_meta"]["hostvars"]["b01-gpu02"]


def test_what_the_plugin_makes_passes_the_stages_inventory_check(tmp_path):
    """The first play of every batched stage, on a manifest and, as a second source, the cluster's control plane."""
    config = source(tmp_path, "handover.yml")
    control_plane = tmp_path / "control-plane.yml"
    control_plane.write_text("kube_control_plane:\n  hosts:\n    k8s-cp01: {ansible_host: 10.20.0.11}\n")
    proc = ansible("ansible-playbook", "-i", str(config), "-i", str(control_plane), "playbooks/stage_inputs.yml",
                   "-e", '{"__stage_prefixes": []}')  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Check the inventory against the rack inventory contract" in proc.stdout
    assert "k8s-cp01" not in proc.stdout
    assert all(f"{host} " in proc.stdout for host in ("a01-gpu01", "a01-gpu02", "a02-gpu01", "a02-inf01"))


def test_a_faulty_manifest_adds_no_host_and_names_every_problem_by_line(tmp_path):
    config = source(tmp_path, "faulty.csv")
    proc = ansible("ansible-inventory", "-i", str(config), "--list")
    assert proc.returncode != 0
    manifest = tmp_path / "faulty.csv"
    assert f"the rack manifest {manifest} has 13 problem(s), no host was added" in proc.stderr
    for expected in (
        f"{manifest} line 3: hostname 'A01_GPU02' is not a lower-case DNS name",
        f"{manifest} line 3: address '10.20.1.311' is neither an IPv4 address nor a DNS name",
        f"{manifest} line 4: u '61' is not a rack unit",
        f"{manifest} line 4: hostname 'a01-gpu01' is also on line 2",
    ):
        assert expected in proc.stderr
    # A playbook on it stops before any task.
    play = ansible(
        "ansible-playbook", "-i", str(config), "playbooks/stage_inputs.yml", "-e", '{"__stage_prefixes": []}'
    )
    assert play.returncode != 0 and "TASK [" not in play.stdout


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ("columns: {host: Name}\n", "columns maps the fields hostname, address, rack, u, profile, serial, bmc"),
        ("columns: {hostname: ''}\n", "an empty header is not one of them"),
        ('delimiter: ";;"\n', "delimiter is ';;'; give one character, such as , or ;"),
        ("profiles: [GB200]\n", "profiles names 'GB200', not a profile name (lower case, digits, underscores)"),
    ],
)
def test_a_bad_configuration_is_refused_with_the_option_and_the_fix(tmp_path, settings, expected):
    config = source(tmp_path, "handover.csv", settings)
    proc = ansible("ansible-inventory", "-i", str(config), "--list")
    assert proc.returncode != 0 and expected in proc.stderr, proc.stderr


def test_a_missing_manifest_and_a_configuration_of_another_name(tmp_path):
    config = tmp_path / "x.rack_manifest.yml"
    config.write_text("plugin: gpuops.bringup.rack_manifest\nmanifest: racks.csv\n")
    proc = ansible("ansible-inventory", "-i", str(config), "--list", cwd=tmp_path)
    assert proc.returncode != 0 and f"the manifest {tmp_path / 'racks.csv'} cannot be read" in proc.stderr
    other = source(tmp_path, "handover.csv", name="inventory.yml")
    proc = ansible("ansible-inventory", "-i", str(other), "--list")
    assert proc.returncode != 0
    assert "could not be verified by inventory plugin 'gpuops.bringup.rack_manifest'" in proc.stderr


def test_the_plugin_s_documentation_renders():
    proc = ansible("ansible-doc", "-t", "inventory", "gpuops.bringup.rack_manifest")
    assert proc.returncode == 0, proc.stderr
    assert "Reads a rack manifest" in proc.stdout
    assert "keyed_groups" in proc.stdout
