"""Each role's meta/main.yml platforms are the OS releases the role accepts: those of its preflight's table of
supported releases (vars/main.yml, or module_utils for os_baseline), no more and no fewer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpuops.bringup.plugins.module_utils import os_baseline  # noqa: E402

# os-release ID and major -> Galaxy's platform name and version.
GALAXY = {
    "debian": ("Debian", {"12": "bookworm", "13": "trixie"}),
    "ubuntu": ("Ubuntu", {"22": "jammy", "24": "noble"}),
    "rocky": ("EL", {"8": "8", "9": "9"}),
    "rhel": ("EL", {"8": "8", "9": "9"}),
}
EVERY_OS = {os_id: list(majors) for os_id, majors in os_baseline.SUPPORTED.items()}
# Roles without a table of their own: rdma_fabric's inbox stack needs apt (its preflight refuses other package
# managers; DOCA's releases are a subset); acceptance reads any node the collection brings up; _common is every stage's.
WITHOUT_A_TABLE = {
    "rdma_fabric": {"debian": ["12", "13"], "ubuntu": ["22", "24"]},
    "acceptance": EVERY_OS,
    "_common": EVERY_OS,
    "os_baseline": EVERY_OS,
}
ROLES = sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/meta/main.yml"))


def accepted(role):
    """{os id: [majors]} the role's preflight accepts."""
    if role in WITHOUT_A_TABLE:
        return WITHOUT_A_TABLE[role]
    table = yaml.safe_load((ROOT / "roles" / role / "vars" / "main.yml").read_text())[f"__{role}_supported"]
    # A table by package source (distribution, cuda_repo): the union of the sources.
    if all(isinstance(value, dict) for value in table.values()):
        merged = {}
        for by_os in table.values():
            for os_id, majors in by_os.items():
                merged.setdefault(os_id, []).extend(majors)
        table = merged
    return table


def platforms(accepted_releases):
    found = {}
    for os_id, majors in accepted_releases.items():
        name, versions = GALAXY[os_id]
        found.setdefault(name, set()).update(versions[major] for major in majors)
    return found


@pytest.mark.parametrize("role", ROLES)
def test_meta_platforms_are_what_the_role_accepts(role):
    meta = yaml.safe_load((ROOT / "roles" / role / "meta" / "main.yml").read_text())
    declared = {p["name"]: {str(v) for v in p["versions"]} for p in meta["galaxy_info"]["platforms"]}
    assert declared == platforms(accepted(role))


def test_every_role_with_a_table_is_read_from_it():
    """A role that gains a table of supported releases is checked against it, not against the list above."""
    tables = set()
    for role in ROLES:
        variables = ROOT / "roles" / role / "vars" / "main.yml"
        if variables.is_file() and f"__{role}_supported:" in variables.read_text():
            tables.add(role)
    assert tables.isdisjoint(WITHOUT_A_TABLE)
    assert tables == {"cuda_toolkit", "k8s_node", "nccl_tests", "nvidia_container_toolkit", "nvidia_driver"}
