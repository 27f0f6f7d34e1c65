"""sysfs trees for the InfiniBand tests, from the fixtures of tests/fixtures/infiniband (tests/fixtures/SOURCES.md).

A sysfs case is a directory with root/ (files at their sysfs path) and an
optional tree.txt ("d <path>" lines for directories git cannot hold empty).
derive_sysfs() writes the tree a kernel would show for a captured ibstat
output; it is a declared derivation, used where no sysfs capture of the same
host exists, and leaves out what ibstat cannot tell (see its docstring).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ansible_collections.gpuops.bringup.plugins.module_utils import infiniband

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "infiniband"
IBSTAT = FIXTURES / "ibstat"
SYSFS = FIXTURES / "sysfs"

# The kernel's numbering and spelling (drivers/infiniband/core/sysfs.c: "%d: %s").
KERNEL_STATES = {"down": "1: DOWN", "init": "2: INIT", "armed": "3: ARMED", "active": "4: ACTIVE"}
KERNEL_PHYSICAL_STATES = {"polling": "2: Polling", "disabled": "3: Disabled", "link_up": "5: LinkUp"}


def ibstat(name):
    return (IBSTAT / name).read_text()


def materialise(case, dest):
    """Copy <case>/root to dest and create the directories tree.txt names; returns dest."""
    case = SYSFS / case
    if (case / "root").exists():
        shutil.copytree(case / "root", dest)
    dest.mkdir(parents=True, exist_ok=True)
    tree = case / "tree.txt"
    for line in tree.read_text().splitlines() if tree.exists() else []:
        kind, path = line.split(" ", 1)
        if kind == "d":
            (dest / path).mkdir(parents=True, exist_ok=True)
    return dest


def derive_sysfs(ibstat_text, dest, with_rate=False):
    """Write class/infiniband/<ca>/{fw_ver,hca_type,node_guid,ports/<n>/{state,phys_state,link_layer}} for ibstat.

    The rate file is left out unless with_rate: ibstat's "Rate: 400" does not
    say the width and lane speed the kernel prints ("400 Gb/sec (4X NDR)").
    """
    for device in infiniband.parse_ibstat(ibstat_text)["devices"]:
        base = dest / "class" / "infiniband" / device["name"]
        (base / "ports").mkdir(parents=True, exist_ok=True)
        (base / "fw_ver").write_text(device["fw_version"] + "\n")
        (base / "hca_type").write_text(device["ca_type"] + "\n")
        digits = device["node_guid"][2:]
        (base / "node_guid").write_text(":".join(digits[i : i + 4] for i in range(0, 16, 4)) + "\n")
        for port in device["ports"]:
            path = base / "ports" / str(port["port"])
            path.mkdir()
            (path / "state").write_text(KERNEL_STATES[port["state"]] + "\n")
            (path / "phys_state").write_text(KERNEL_PHYSICAL_STATES[port["physical_state"]] + "\n")
            (path / "link_layer").write_text(port["link_layer"] + "\n")
            if with_rate:
                (path / "rate").write_text(f"{port['rate_gbps']:g} Gb/sec\n")
    return dest
