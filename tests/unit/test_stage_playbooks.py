"""The plays of the stage playbooks act on the rack's nodes through the filter gpuops.bringup.node_hosts, which also
loads the collection's filters once in the controller's main process (plugins/filter/inventory.py says why)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NODE_HOSTS = "{{ groups | gpuops.bringup.node_hosts }}"
# The plays on other hosts: the reports are written on the controller; a stage's own input checks have no host when
# site.yml has checked every stage's inputs first.
OTHER_HOSTS = {
    ("report.yml", "localhost"),
    ("stage_inputs.yml", "{{ [] if __stage_inputs_checked | default(false) else groups | gpuops.bringup.node_hosts }}"),
}


def plays():
    for path in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()):
            if "hosts" in play:
                yield path.name, play["hosts"]


@pytest.mark.parametrize(("playbook", "hosts"), list(plays()))
def test_every_stage_play_names_its_hosts_through_node_hosts(playbook, hosts):
    assert hosts == NODE_HOSTS or (playbook, hosts) in OTHER_HOSTS


# A fresh interpreter: the unit tests import the filter modules themselves.
PROBE = """
import json, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader([sys.argv[1]])
from ansible.plugins.loader import filter_loader
filter_loader.get("gpuops.bringup.node_hosts")
prefix = "ansible_collections.gpuops.bringup.plugins.filter."
print(json.dumps(sorted(m[len(prefix):] for m in sys.modules if m.startswith(prefix))))
"""


def test_resolving_node_hosts_loads_every_filter_of_the_collection():
    """What the stage playbooks rely on for speed: ansible-core imports every filter file of a collection to find one
    of its filters. Should a release load only the file it needs, each worker's import gets cheap anyway, and the
    comments that say why node_hosts is a filter are stale (this test then tells)."""
    loaded = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / ".collections")], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(loaded) == sorted(p.stem for p in (ROOT / "plugins" / "filter").glob("*.py"))
