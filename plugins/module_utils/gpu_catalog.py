# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA GPU products and CUDA driver requirements, kept as data.

lookup() answers, for a product name as nvidia-smi prints it or a PCI device
id, the architecture, compute capability and whether NVIDIA's open kernel
modules are required, supported or unsupported. cuda_min_driver() answers
the minimum Linux driver a CUDA toolkit version needs. Sources are cited next
to each table; extend a table from the same source, never from memory.

Pure Python and Python 3.8 compatible: it ships to managed nodes with the
modules that import it.
"""

from __future__ import annotations

import re

# open_modules values.
REQUIRED = "required"  # only the open kernel modules drive the GPU
SUPPORTED = "supported"  # open (NVIDIA's default since R560) or proprietary
UNSUPPORTED = "unsupported"  # proprietary kernel modules only

# Per GPU family, in name-matching order (a more specific pattern before the
# one it overlaps: "H100 NVL" before "H100"):
# (family, architecture, compute capability, open kernel modules, name pattern)
#
# The name pattern is a regular expression matched against the whole product
# name, lower-cased, with runs of white space made single and an optional
# "NVIDIA " / "Tesla " prefix removed. It catches variants the DEVICES table
# below does not list (a new memory size, a "-LS" board); listed names match
# exactly first.
#
# Compute capability: NVIDIA, "CUDA GPU Compute Capability",
# https://developer.nvidia.com/cuda-gpus (GB300/B300 10.3, GB200/B200 10.0,
# RTX PRO 6000 Blackwell 12.0, GH200/H200/H100 9.0, L4/L40/L40S 8.9,
# A40/A10/A16/A2 8.6, A100/A30 8.0, T4 7.5) and "Legacy CUDA GPU Compute
# Capability", https://developer.nvidia.com/cuda-legacy-gpus (V100 7.0). H20:
# NVIDIA MIG user guide, "Supported GPUs",
# https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html
# (H20, GH100, 9.0). Products neither page lists carry the value of the chip
# they share with a listed one, marked "same chip as" below.
#
# Open kernel modules: NVIDIA driver installation guide, "Kernel Modules",
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html
# ("Proprietary ... is required for older GPUs from the Maxwell, Pascal, or
# Volta architectures. The open-source GPU kernel modules are not compatible
# with these platforms"; open modules "are only for Turing and newer";
# "Starting in the 560 driver release series, the open kernel module flavor is
# the default"), and NVIDIA Technical Blog, "NVIDIA Transitions Fully Towards
# Open-Source GPU Kernel Modules" (2024-07-17),
# https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/
# ("For cutting-edge platforms such as NVIDIA Grace Hopper or NVIDIA
# Blackwell, you must use the open-source GPU kernel modules. The proprietary
# drivers are unsupported on these platforms").
FAMILIES = (
    ("V100S", "volta", "7.0", UNSUPPORTED, r"v100s(?:[- ].*)?"),
    ("V100", "volta", "7.0", UNSUPPORTED, r"v100(?:[- ].*)?"),
    ("T4", "turing", "7.5", SUPPORTED, r"t4"),
    ("A100", "ampere", "8.0", SUPPORTED, r"a100(?:[- ].*)?"),
    # Same chip as A100 (GA100).
    ("A800", "ampere", "8.0", SUPPORTED, r"a800(?:[- ].*)?"),
    ("A30", "ampere", "8.0", SUPPORTED, r"a30(?:[- ].*)?"),
    ("A40", "ampere", "8.6", SUPPORTED, r"a40(?:[- ].*)?"),
    # A10G and A10M: same chip as A10 (GA102); their device ids follow A10's.
    ("A10G", "ampere", "8.6", SUPPORTED, r"a10g(?:[- ].*)?"),
    ("A10M", "ampere", "8.6", SUPPORTED, r"a10m(?:[- ].*)?"),
    ("A10", "ampere", "8.6", SUPPORTED, r"a10(?:[- ].*)?"),
    ("A16", "ampere", "8.6", SUPPORTED, r"a16(?:[- ].*)?"),
    ("A2", "ampere", "8.6", SUPPORTED, r"a2(?:[- ].*)?"),
    ("RTX A6000", "ampere", "8.6", SUPPORTED, r"rtx a6000(?:[- ].*)?"),
    ("H100 NVL", "hopper", "9.0", SUPPORTED, r"h100 nvl(?:[- ].*)?"),
    ("H100 PCIe", "hopper", "9.0", SUPPORTED, r"h100[- ]pcie(?:[- ].*)?"),
    ("H100 SXM", "hopper", "9.0", SUPPORTED, r"h100(?:[- ].*)?"),
    # Same chip as H100 (GH100).
    ("H800", "hopper", "9.0", SUPPORTED, r"h800(?:[- ].*)?"),
    ("H20", "hopper", "9.0", SUPPORTED, r"h20(?:[- ].*)?"),
    ("H200 NVL", "hopper", "9.0", SUPPORTED, r"h200 nvl(?:[- ].*)?"),
    ("H200", "hopper", "9.0", SUPPORTED, r"h200(?:[- ].*)?"),
    # Grace Hopper: open modules only (NVIDIA blog above).
    ("GH200", "hopper", "9.0", REQUIRED, r"gh200(?:[- ].*)?"),
    ("L40S", "ada", "8.9", SUPPORTED, r"l40s(?:[- ].*)?"),
    ("L40", "ada", "8.9", SUPPORTED, r"l40(?:[- ].*)?"),
    # L20 and L2: same chips as L40 (AD102) and L4 (AD104).
    ("L20", "ada", "8.9", SUPPORTED, r"l20(?:[- ].*)?"),
    ("L4", "ada", "8.9", SUPPORTED, r"l4(?:[- ].*)?"),
    ("L2", "ada", "8.9", SUPPORTED, r"l2(?:[- ].*)?"),
    ("RTX 6000 Ada", "ada", "8.9", SUPPORTED, r"rtx 6000 ada(?: .*)?"),
    ("B200", "blackwell", "10.0", REQUIRED, r"b200(?:[- ].*)?"),
    ("GB200", "blackwell", "10.0", REQUIRED, r"gb200(?:[- ].*)?"),
    ("B300", "blackwell", "10.3", REQUIRED, r"b300(?:[- ].*)?"),
    ("GB300", "blackwell", "10.3", REQUIRED, r"gb300(?:[- ].*)?"),
    ("RTX PRO 6000 Blackwell", "blackwell", "12.0", REQUIRED, r"rtx pro 6000 blackwell(?: .*)?"),
)

# The last driver branch that supports an architecture; absent: ongoing.
# NVIDIA Data Center Drivers, "CUDA Toolkit, Driver, and Architecture Matrix",
# https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
# (Volta 7.0: last CUDA toolkit 12.x, last driver R580).
LAST_DRIVER_BRANCH = {"volta": "580"}

# (PCI device id, product name as nvidia-smi prints it, family)
#
# Turing and newer: NVIDIA/open-gpu-kernel-modules, README.md, "Compatible
# GPUs", at commit 1893c6c8fd17c79d17706d8382af09d360b5b703 (575.64.03). Where
# that table lists a PCI subsystem after the device id, the name holds for
# NVIDIA's boards of that device; this catalog keys on the device id alone.
# Volta (the README lists Turing and newer only): the driver's own name table,
# NVIDIA/open-gpu-kernel-modules src/nvidia/generated/g_nv_name_released.h at
# the same commit. B200 0x2909, B300 and GB300 are newer than 575.64.03: the
# same README table as carried, for the 610.43.03 driver, by the fork
# aikitoria/open-gpu-kernel-modules README.md at commit
# 08dc34555bf8cdacdd89237da42419e6ce5efdc4; check them against NVIDIA's own
# README when it is next updated here.
DEVICES = (
    (0x1DB1, "Tesla V100-SXM2-16GB", "V100"),
    (0x1DB3, "Tesla V100-FHHL-16GB", "V100"),
    (0x1DB4, "Tesla V100-PCIE-16GB", "V100"),
    (0x1DB5, "Tesla V100-SXM2-32GB", "V100"),
    (0x1DB6, "Tesla V100-PCIE-32GB", "V100"),
    (0x1DB7, "Tesla V100-DGXS-32GB", "V100"),
    (0x1DB8, "Tesla V100-SXM3-32GB", "V100"),
    (0x1DF6, "Tesla V100S-PCIE-32GB", "V100S"),
    (0x1EB8, "Tesla T4", "T4"),
    (0x20B0, "NVIDIA A100-SXM4-40GB", "A100"),
    (0x20B2, "NVIDIA A100-SXM4-80GB", "A100"),
    (0x20B3, "NVIDIA A100-SXM-64GB", "A100"),
    (0x20B5, "NVIDIA A100 80GB PCIe", "A100"),
    (0x20F1, "NVIDIA A100-PCIE-40GB", "A100"),
    (0x20B7, "NVIDIA A30", "A30"),
    (0x20BD, "NVIDIA A800-SXM4-40GB", "A800"),
    (0x20F3, "NVIDIA A800-SXM4-80GB", "A800"),
    (0x20F5, "NVIDIA A800 80GB PCIe", "A800"),
    (0x20F5, "NVIDIA A800 80GB PCIe LC", "A800"),
    (0x20F6, "NVIDIA A800 40GB Active", "A800"),
    (0x2230, "NVIDIA RTX A6000", "RTX A6000"),
    (0x2235, "NVIDIA A40", "A40"),
    (0x2236, "NVIDIA A10", "A10"),
    (0x2237, "NVIDIA A10G", "A10G"),
    (0x2238, "NVIDIA A10M", "A10M"),
    # One device id, two boards told apart by PCI subsystem (14A9 A16, 157E A2).
    (0x25B6, "NVIDIA A16", "A16"),
    (0x25B6, "NVIDIA A2", "A2"),
    (0x2321, "NVIDIA H100 NVL", "H100 NVL"),
    (0x2322, "NVIDIA H800 PCIe", "H800"),
    (0x2324, "NVIDIA H800", "H800"),
    (0x2329, "NVIDIA H20", "H20"),
    (0x232C, "NVIDIA H20-3e", "H20"),
    (0x2330, "NVIDIA H100 80GB HBM3", "H100 SXM"),
    (0x2331, "NVIDIA H100 PCIe", "H100 PCIe"),
    (0x2335, "NVIDIA H200", "H200"),
    (0x2339, "NVIDIA H100", "H100 SXM"),
    (0x233A, "NVIDIA H800 NVL", "H800"),
    (0x233B, "NVIDIA H200 NVL", "H200 NVL"),
    (0x2342, "NVIDIA GH200 120GB", "GH200"),
    (0x2342, "NVIDIA GH200 480GB", "GH200"),
    (0x2348, "NVIDIA GH200 144G HBM3e", "GH200"),
    (0x26B1, "NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    (0x26B5, "NVIDIA L40", "L40"),
    (0x26B9, "NVIDIA L40S", "L40S"),
    (0x26BA, "NVIDIA L20", "L20"),
    (0x27B6, "NVIDIA L2", "L2"),
    (0x27B8, "NVIDIA L4", "L4"),
    (0x2901, "NVIDIA B200", "B200"),
    (0x2909, "NVIDIA B200", "B200"),
    (0x2941, "NVIDIA GB200", "GB200"),
    (0x2BB1, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell"),
    (0x2BB4, "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX PRO 6000 Blackwell"),
    (0x2BB5, "NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell"),
    (0x3182, "NVIDIA B300 SXM6 AC", "B300"),
    (0x31C2, "NVIDIA GB300", "GB300"),
    (0x31C3, "NVIDIA GB300", "GB300"),
)

_PREFIX = re.compile(r"(?:nvidia )?(?:tesla )?")
_FAMILY = {row[0]: row for row in FAMILIES}
_PATTERNS = tuple((row[0], re.compile(row[4])) for row in FAMILIES)


def _normalized(name):
    return " ".join(str(name).split()).lower()


_BY_NAME = {_normalized(name): (name, family) for _device, name, family in DEVICES}


def _rows_by_id():
    rows = {}
    for device, name, family in DEVICES:
        rows.setdefault(device, []).append((name, family))
    return rows


_BY_ID = _rows_by_id()


def lookup(product_name=None, pci_device_id=None):
    """The catalog entry for a product name or PCI device id (0x2330, "2330", "0x233010DE", "10de:2330"), or None.

    A known PCI device id wins over the name: it is what the hardware reports;
    the name then only picks between boards that share the id (A16 and A2).
    Returns {"product", "family", "architecture", "compute_capability",
    "open_modules", "last_driver_branch", "pci_device_ids"}; product is the
    name nvidia-smi prints for a listed product, else the name given.
    """
    named = _match(product_name)
    device = _device_id(pci_device_id) if pci_device_id is not None else None
    rows = _BY_ID.get(device) if device is not None else None
    if rows:
        if named is not None and named[1] in [family for _name, family in rows]:
            return _entry(*named)
        names = _unique(name for name, _family in rows)
        families = _unique(family for _name, family in rows)
        return _entry(" or ".join(names), families[0], " or ".join(families))
    if named is None:
        return None
    return _entry(*named)


def identify(value):
    """lookup() for one value that is either a product name or a PCI device id; None when unknown.

    A string is tried as a product name first ("A100" is also valid hex), then
    as a PCI device id; an int is a PCI device id.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return lookup(pci_device_id=value)
    if not isinstance(value, str):
        return None
    return lookup(product_name=value) or lookup(pci_device_id=value)


def unknown_gpu(value):
    """Why identify(value) found nothing, and how to extend the catalog."""
    extend = (
        "add its PCI device id and nvidia-smi name to DEVICES in plugins/module_utils/gpu_catalog.py "
        "(source: the Compatible GPUs table in NVIDIA/open-gpu-kernel-modules README.md)"
    )
    device = _device_id(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if device is None:
            return f"{value!r} is not a PCI device id (0 to 0xffff, or nvidia-smi's 0xDDDD10DE)"
        hint = ""
        if 0 <= value <= 9999 and _device_id(str(value)) in _BY_ID:
            hint = f" (an unquoted {value} in YAML is a decimal number; write '{value}' or 0x{value} for the hex id)"
        return f"PCI device id 0x{device:04x} is not in the GPU catalog{hint}; {extend}"
    if not isinstance(value, str):
        return f"expected a product name or a PCI device id, got {type(value).__name__}"
    if device is None:
        return f"{value!r} is not a product name in the GPU catalog; {extend}"
    if re.fullmatch(r"[0-9a-f]{1,4}", value.strip().lower()):
        return f"{value!r} is neither a product name nor a PCI device id in the GPU catalog; {extend}"
    return f"PCI device id 0x{device:04x} ({value!r}) is not in the GPU catalog; {extend}"


def _match(product_name):
    """(product, family) for a product name: a listed name exactly, else a family's name pattern; or None."""
    if not isinstance(product_name, str) or not product_name.strip():
        return None
    key = _normalized(product_name)
    if key in _BY_NAME:
        return _BY_NAME[key]
    bare = _PREFIX.sub("", key, count=1)
    for family, pattern in _PATTERNS:
        if pattern.fullmatch(bare):
            return " ".join(product_name.split()), family
    return None


def _unique(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def _entry(product, family, family_label=None):
    _name, architecture, capability, open_modules, _pattern = _FAMILY[family]
    return {
        "product": product,
        "family": family_label or family,
        "architecture": architecture,
        "compute_capability": capability,
        "open_modules": open_modules,
        "last_driver_branch": LAST_DRIVER_BRANCH.get(architecture),
        "pci_device_ids": sorted({f"0x{device:04x}" for device, _name, fam in DEVICES if fam == family}),
    }


def _device_id(value):
    """The 16-bit device id from 0x2330, "2330", "0x2330", nvidia-smi's "0x233010DE" or lspci's "10de:2330"; else None.

    An int is the id's numeric value (0x2330); nvidia-smi's 0x233010DE (device
    id, then vendor 10DE) is understood as an int too.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if 0 <= value <= 0xFFFF:
            return value
        if value & 0xFFFF == 0x10DE and 0 <= value >> 16 <= 0xFFFF:
            return value >> 16
        return None
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if text.startswith("10de:"):
        text = text[5:]
    elif text.startswith("0x"):
        text = text[2:]
        if len(text) == 8 and text.endswith("10de"):
            text = text[:4]
    elif len(text) == 8 and text.endswith("10de"):
        text = text[:4]
    if not re.fullmatch(r"[0-9a-f]{1,4}", text):
        return None
    return int(text, 16)


# CUDA Toolkit release -> minimum Linux x86_64 driver:
# (release as NVIDIA names it, version number, driver).
#
# NVIDIA CUDA Toolkit Release Notes, "CUDA Toolkit and Corresponding Driver
# Versions", Linux x86_64 "Toolkit Driver Version" column,
# https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html#cuda-driver
# 11.0 RC to 12.9 Update 1: the table as the CUDA 13.4 Update 1 notes print it
# ("Older CUDA versions (12.9 and earlier)"). 13.0 GA to 13.2 Update 2: the
# CUDA 13.2 Update 2 notes. 13.3 GA and Update 1: the CUDA 13.3 notes,
# https://docs.nvidia.com/cuda/archive/13.3.0/cuda-toolkit-release-notes/index.html
# From 13.4 the notes give only the driver branch ("CUDA 13.4 -> R615"; the
# driver is no longer bundled on Linux); the minimum there is the branch
# number, which any driver of that branch or later satisfies.
# CUDA 13.4's GA release is versioned 13.4.1 (13.4.0 was a developer
# preview) and its Update 1 13.4.2; CUDA 11.0's RC is 11.0.1, GA 11.0.2 and
# Update 1 11.0.3; elsewhere the third number is the update.
TOOLKIT_DRIVERS = (
    ("13.4 Update 1", "13.4.2", "615"),
    ("13.4 GA", "13.4.1", "615"),
    ("13.3 Update 1", "13.3.1", "610.43.02"),
    ("13.3 GA", "13.3.0", "610.43.02"),
    ("13.2 Update 2", "13.2.2", "595.71.05"),
    ("13.2 Update 1", "13.2.1", "595.58.03"),
    ("13.2 GA", "13.2.0", "595.45.04"),
    ("13.1 Update 1", "13.1.1", "590.48.01"),
    ("13.1 GA", "13.1.0", "590.44.01"),
    ("13.0 Update 2", "13.0.2", "580.95.05"),
    ("13.0 Update 1", "13.0.1", "580.82.07"),
    ("13.0 GA", "13.0.0", "580.65.06"),
    ("12.9 Update 1", "12.9.1", "575.57.08"),
    ("12.9 GA", "12.9.0", "575.51.03"),
    ("12.8 Update 1", "12.8.1", "570.124.06"),
    ("12.8 GA", "12.8.0", "570.26"),
    ("12.6 Update 3", "12.6.3", "560.35.05"),
    ("12.6 Update 2", "12.6.2", "560.35.03"),
    ("12.6 Update 1", "12.6.1", "560.35.03"),
    ("12.6 GA", "12.6.0", "560.28.03"),
    ("12.5 Update 1", "12.5.1", "555.42.06"),
    ("12.5 GA", "12.5.0", "555.42.02"),
    ("12.4 Update 1", "12.4.1", "550.54.15"),
    ("12.4 GA", "12.4.0", "550.54.14"),
    ("12.3 Update 1", "12.3.1", "545.23.08"),
    ("12.3 GA", "12.3.0", "545.23.06"),
    ("12.2 Update 2", "12.2.2", "535.104.05"),
    ("12.2 Update 1", "12.2.1", "535.86.09"),
    ("12.2 GA", "12.2.0", "535.54.03"),
    ("12.1 Update 1", "12.1.1", "530.30.02"),
    ("12.1 GA", "12.1.0", "530.30.02"),
    ("12.0 Update 1", "12.0.1", "525.85.12"),
    ("12.0 GA", "12.0.0", "525.60.13"),
    ("11.8 GA", "11.8.0", "520.61.05"),
    ("11.7 Update 1", "11.7.1", "515.48.07"),
    ("11.7 GA", "11.7.0", "515.43.04"),
    ("11.6 Update 2", "11.6.2", "510.47.03"),
    ("11.6 Update 1", "11.6.1", "510.47.03"),
    ("11.6 GA", "11.6.0", "510.39.01"),
    ("11.5 Update 2", "11.5.2", "495.29.05"),
    ("11.5 Update 1", "11.5.1", "495.29.05"),
    ("11.5 GA", "11.5.0", "495.29.05"),
    ("11.4 Update 4", "11.4.4", "470.82.01"),
    ("11.4 Update 3", "11.4.3", "470.82.01"),
    ("11.4 Update 2", "11.4.2", "470.57.02"),
    ("11.4 Update 1", "11.4.1", "470.57.02"),
    ("11.4 GA", "11.4.0", "470.42.01"),
    ("11.3 Update 1", "11.3.1", "465.19.01"),
    ("11.3 GA", "11.3.0", "465.19.01"),
    ("11.2 Update 2", "11.2.2", "460.32.03"),
    ("11.2 Update 1", "11.2.1", "460.32.03"),
    ("11.2 GA", "11.2.0", "460.27.03"),
    ("11.1 Update 1", "11.1.1", "455.32"),
    ("11.1 GA", "11.1.0", "455.23"),
    ("11.0 Update 1", "11.0.3", "450.51.06"),
    ("11.0 GA", "11.0.2", "450.51.05"),
    ("11.0 RC", "11.0.1", "450.36.06"),
)

# CUDA major version -> minimum Linux driver under minor version
# compatibility (a toolkit runs, with a limited feature set, on any driver of
# its major family from this one on).
# 11.x: 450.80.02, NVIDIA CUDA Compatibility guide, "Minor Version
# Compatibility", https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
# ("by upgrading to Tesla Recommended Drivers 450.80.02 (Linux) ... minor
# version compatibility is possible across the CUDA 11.x family").
# 12.x: 525.60.13, the CUDA 12.x release notes' table "CUDA Toolkit and
# Minimum Required Driver Version for CUDA Minor Version Compatibility"
# (today's guide rounds it to ">= 525"; 525.60.13 is also 12.0 GA's driver).
# 13.x: ">= 580", the same guide and the CUDA 13.x release notes.
MINOR_COMPATIBILITY_DRIVERS = {11: "450.80.02", 12: "525.60.13", 13: "580"}

COMPATIBILITY = ("toolkit", "minor")

_BY_RELEASE = {label.lower(): driver for label, _version, driver in TOOLKIT_DRIVERS}
_BY_VERSION = {version: driver for _label, version, driver in TOOLKIT_DRIVERS}


def cuda_min_driver(version, compatibility="toolkit"):
    """The minimum Linux driver version (a string such as "570.26") for a CUDA toolkit version.

    version: "12.8" (the GA release), "12.8 GA", "12.8 Update 1" or the full
    version number "12.8.1"; an optional "CUDA " prefix is ignored.
    compatibility: "toolkit" (default), the driver NVIDIA lists for that exact
    release; "minor", the oldest driver of the major family that runs it under
    CUDA minor version compatibility.
    Raises ValueError naming the value and what is known.
    """
    if compatibility not in COMPATIBILITY:
        raise ValueError(f"compatibility must be one of {', '.join(COMPATIBILITY)}, got {compatibility!r}")
    text = _cuda_version_text(version)
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(?: (ga|rc|update (\d+)))?", text)
    if match is None or (match.group(3) is not None and match.group(4) is not None):
        raise ValueError(
            f"CUDA version {version!r} is not of the form 12.8, 12.8 GA, 12.8 Update 1 or 12.8.1 "
            f"(major.minor means the GA release)"
        )
    if compatibility == "minor":
        major = int(match.group(1))
        if major not in MINOR_COMPATIBILITY_DRIVERS:
            majors = ", ".join(f"{m}.x" for m in sorted(MINOR_COMPATIBILITY_DRIVERS))
            raise ValueError(f"CUDA {text} has no minor version compatibility minimum; known: {majors}")
        return MINOR_COMPATIBILITY_DRIVERS[major]
    major_minor = f"{match.group(1)}.{match.group(2)}"
    if match.group(3) is not None:
        driver = _BY_VERSION.get(f"{major_minor}.{match.group(3)}")
    else:
        driver = _BY_RELEASE.get(f"{major_minor} {match.group(4) or 'ga'}")
    if driver is None:
        raise ValueError(_unknown_cuda(version, major_minor))
    return driver


def driver_version_key(version):
    """Sortable key for an NVIDIA driver version ("550.54.15" -> (550, 54, 15)); ValueError if it is not one."""
    text = str(version).strip()
    if not re.fullmatch(r"[0-9]{1,9}(?:\.[0-9]{1,9})*", text):
        raise ValueError(f"{version!r} is not an NVIDIA driver version such as 550.54.15")
    return tuple(int(part) for part in text.split("."))


def driver_at_least(installed, minimum):
    """Whether driver version installed is minimum or later, numerically part by part (570.124.06 > 570.26)."""
    return driver_version_key(installed) >= driver_version_key(minimum)


def _cuda_version_text(version):
    if isinstance(version, bool) or not isinstance(version, (str, int, float)):
        raise ValueError(f"CUDA version must be a string such as '12.8', got {type(version).__name__}")
    text = " ".join(str(version).split()).lower()
    if text.startswith("cuda "):
        text = text[5:]
    return text


def _unknown_cuda(version, major_minor):
    same_minor = [
        f"{label} ({number})" for label, number, _d in reversed(TOOLKIT_DRIVERS) if label.startswith(major_minor + " ")
    ]
    oldest, newest = TOOLKIT_DRIVERS[-1], TOOLKIT_DRIVERS[0]
    known = f"known: CUDA {oldest[0]} ({oldest[1]}) to {newest[0]} ({newest[1]})"
    if same_minor:
        known = f"known {major_minor} releases: {', '.join(same_minor)}"
    return f"CUDA {version!r} is not in NVIDIA's table of toolkit driver versions; {known}"
