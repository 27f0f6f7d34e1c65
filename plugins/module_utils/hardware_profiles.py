# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hardware profiles the collection ships, and which one a host gets.

A host's profile is named by the one profile group it is in (hgx_h100_8gpu...), as the rack inventory contract says
(inventory_schema). Its gpuops_hardware is that profile: one of BUILTIN, or of the site's own profiles
(gpuops_hardware_profiles, which may also replace a built-in one), with gpuops_hardware_overrides merged into it key
by key. An inventory that defines gpuops_hardware itself in a group's variables (as before the profiles shipped) wins
over all of this. A host in no profile group gets no profile ({}): the inventory check says so, with the names.
"""

from __future__ import annotations

import copy
import re

# A profile's name, which is also its inventory group's: lower case, digits, underscores.
NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


def is_name(value):
    """Whether value can name a profile (and its group)."""
    return isinstance(value, str) and bool(NAME.match(value))


# HGX H100 8-GPU: SXM5 GPUs on NVSwitch, one 400 Gb/s NDR InfiniBand port per GPU (ConnectX-7) for the compute
# fabric. The acceptance stage's gates for 8x H100 80GB HBM3 are published ones (acceptance.PUBLISHED_GATES:
# Azure's health checks, nd96isr_h100_v5: all_reduce 460 GB/s at 16 GiB, ib_write_bw 380 Gb/s); a profile's
# gates: override them. NVLink 4: 18 links per H100 SXM5 GPU. Every GPU of a node on one VBIOS (a mix is a
# warning); firmware.vbios: [...] pins the site's qualified versions, firmware.hca_min the adapters' minimum.
_HGX_H100 = {
    "profile": "hgx_h100_8gpu",
    "description": "HGX H100 8-GPU (SXM5, 80 GB), NVSwitch, 8x NDR 400G InfiniBand",
    "gpu": {"model": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "count": 8, "nvswitch": True, "nvlinks": 18},
    "infiniband": {"ports": 8, "rate_gbps": 400, "link_layer": "InfiniBand"},
    "firmware": {"vbios_drift": "warn"},
}
# HGX H200 8-GPU: the H100 board's design with H200 SXM5 GPUs (141 GB HBM3e), NVSwitch, 8x NDR InfiniBand. Published
# gates (nd96isr_h200_v5): all_reduce 431 GB/s at 16 GiB, ib_write_bw 360 Gb/s.
_HGX_H200 = {
    **_HGX_H100,
    "profile": "hgx_h200_8gpu",
    "description": "HGX H200 8-GPU (SXM5, 141 GB), NVSwitch, 8x NDR 400G InfiniBand",
    "gpu": {**_HGX_H100["gpu"], "model": "NVIDIA H200"},
}
# 4x L40S PCIe inference node: no NVLink or NVSwitch; two 400 Gb/s RoCE ports (ConnectX-7). No bus bandwidth gate is
# published for it: acceptance reports NCCL's figure without requiring it until the site sets
# gates: {nccl_all_reduce_busbw_gbps: ...} from its own baseline.
_PCIE_L40S = {
    "profile": "pcie_l40s_4gpu",
    "description": "4x L40S (PCIe, 48 GB), 2x 400G RoCE",
    "gpu": {"model": "NVIDIA L40S", "architecture": "ada", "count": 4, "nvswitch": False},
    "infiniband": {"ports": 2, "rate_gbps": 400, "link_layer": "Ethernet"},
    "firmware": {"vbios_drift": "warn"},
}
BUILTIN = {p["profile"]: p for p in (_HGX_H100, _HGX_H200, _PCIE_L40S)}


def merged(base, changes):
    """base with changes merged in, mappings key by key (a list or a value replaces what it meets)."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def profiles(site=None):
    """Every profile by name: the built-in ones, then the site's (a site profile of a built-in name replaces it)."""
    return {**BUILTIN, **(site if isinstance(site, dict) else {})}


def resolve(group_names, site=None, overrides=None):
    """The gpuops_hardware of a host in group_names: its one profile group's profile, named after the group, with
    overrides merged in; {} when it is in no profile group or in several (the inventory check names them)."""
    known = profiles(site)
    names = [g for g in dict.fromkeys(group_names or []) if g in known]
    if len(names) != 1 or not isinstance(known[names[0]], dict):
        return {}
    profile = merged(known[names[0]], {"profile": names[0]})
    return merged(profile, overrides) if isinstance(overrides, dict) else profile


ARCHITECTURES = ("volta", "turing", "ampere", "ada", "hopper", "blackwell", "none")
LINK_LAYERS = ("InfiniBand", "Ethernet")
# Signalling rates ibstat and sysfs report, in Gb/s (SDR..XDR, and RoCE NIC speeds).
PORT_RATES = (0, 10, 20, 25, 40, 50, 56, 100, 200, 400, 800)
# Where a whole profile is shown.
FIX = "see plugins/module_utils/hardware_profiles.py for complete profiles"


def is_int(value):
    """An integer, not a bool (YAML's true is an int to Python)."""
    return isinstance(value, int) and not isinstance(value, bool)


# The keys every stage reads from a profile: dotted path, check, what is expected.
_FIELDS = (
    ("profile", is_name, "the profile group's name (lower case, digits, underscores)"),
    ("gpu.model", lambda v: isinstance(v, str), "the product name nvidia-smi reports"),
    ("gpu.architecture", lambda v: v in ARCHITECTURES, f"one of {', '.join(ARCHITECTURES)}"),
    ("gpu.count", lambda v: is_int(v) and 0 <= v <= 16, "an integer from 0 to 16"),
    ("gpu.nvswitch", lambda v: isinstance(v, bool), "true or false"),
    ("infiniband.ports", lambda v: is_int(v) and 0 <= v <= 32, "an integer from 0 to 32"),
    ("infiniband.rate_gbps", lambda v: v in PORT_RATES, f"one of {', '.join(map(str, PORT_RATES))}"),
    ("infiniband.link_layer", lambda v: v in LINK_LAYERS, " or ".join(LINK_LAYERS)),
)


def field_problems(hardware):
    """Problems in the keys every stage reads from a gpuops_hardware mapping, each naming the key, the value and the
    fix; [] for a mapping that has them all (the acceptance stage's own keys are acceptance.hardware_problems')."""
    problems = []
    for path, check, expected in _FIELDS:
        value = hardware
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            problems.append(f"gpuops_hardware.{path} is missing; {FIX}")
        elif not check(value):
            problems.append(f"gpuops_hardware.{path} is {value!r}, expected {expected}; {FIX}")
    return problems
