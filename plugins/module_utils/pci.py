# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCI inventory before any driver: NVIDIA GPUs, NVSwitches and RDMA NICs from lspci -Dnn or sysfs.

parse_lspci_nn() and read_sysfs() give the same device records (address,
class, vendor and device ids, lspci's description); inventory() sorts them
into GPUs (with what the GPU catalog knows of each), NVSwitches and RDMA
NICs, and open_modules() says which NVIDIA kernel module flavour fits all the
GPUs together. Pure functions over text and a rooted reader, so the unit
tests feed them outputs captured on real machines. Python 3.8 compatible.
"""

from __future__ import annotations

import re

from ansible_collections.gpuops.bringup.plugins.module_utils import gpu_catalog, parsing

LSPCI_ARGS = ("-Dnn",)
SYSFS_DEVICES = "bus/pci/devices"

NVIDIA = 0x10DE
# NVIDIA networking (ConnectX, BlueField) still carries Mellanox's vendor id.
MELLANOX = 0x15B3

# PCI class codes (class and subclass), as lspci -nn prints them in brackets.
VGA = 0x0300
DISPLAY_3D = 0x0302
# HGX A100 and H100/H200 baseboards show each NVSwitch as an NVIDIA function of class 0x0680 (the captures in
# tests/fixtures/pci). From HGX B200 on, fabric manager reaches the switches through ConnectX-7 functions with NVLSM
# (NVIDIA Fabric Manager user guide, quoted in siderolabs/extensions#717; siderolabs/extensions#893 logs "found
# NVSwitch LPF: device=mlx5_10"), so no NVSwitch list here speaks for those boards.
BRIDGE_OTHER = 0x0680
ETHERNET = 0x0200
INFINIBAND = 0x0207
GPU_CLASSES = (VGA, DISPLAY_3D)
RDMA_CLASSES = (ETHERNET, INFINIBAND)

# A line in the older form without the bracketed class number ("3D controller:" for "3D controller [0302]:") names
# its class by the pci.ids subclass name alone; these are the names of the classes this module sorts by.
CLASS_NAMES = {
    "vga compatible controller": VGA,
    "3d controller": DISPLAY_3D,
    "bridge": BRIDGE_OTHER,
    "ethernet controller": ETHERNET,
    "infiniband controller": INFINIBAND,
}

# The vendor names pci.ids gives these vendors; lspci prints them before the device name.
VENDOR_NAMES = {NVIDIA: "NVIDIA Corporation", MELLANOX: "Mellanox Technologies"}

OPEN_MODULE_VALUES = (gpu_catalog.REQUIRED, gpu_catalog.SUPPORTED, gpu_catalog.UNSUPPORTED)

_HEX = "[0-9a-fA-F]"
# Address, then the class up to the first colon; the class's bracketed number and the [vendor:device] pair are found
# in Python (one pattern for the whole line was quadratic on blanks, and its id match exponential on notes).
_LINE = re.compile(
    r"(?P<address>(?:(?P<domain>" + _HEX + r"{4,8}):)?(?P<bus>" + _HEX + r"{2}):(?P<slot>" + _HEX + r"{2})"
    r"\.(?P<function>[0-7]))\s+(?P<head>[^:]*):(?P<rest>.*)"
)
_CLASS = re.compile(r"\s\[(?P<class>" + _HEX + r"{4})\]$")
_ID_PAIR = re.compile(r"\[(?P<vendor>" + _HEX + r"{4}):(?P<device>" + _HEX + r"{4})\]")
_NOT_BLANK = re.compile(r"\S")


class PciParseError(parsing.ParseError):
    """The text is not what lspci -Dnn prints; the message says what is wrong."""


def parse_lspci_nn(text):
    """Device records from lspci -nn output, with or without -D (domain) and the bracketed class number.

    Each record: address (domain:bus:slot.function, lower case, domain 0000 when
    lspci did not print one), class_id, vendor_id and device_id (ints),
    description (lspci's vendor and device names, null when absent) and name
    (the device name alone, null when pci.ids did not know the device). Indented
    lines (lspci -v details) are skipped. Text with lines but no device line
    raises PciParseError: it is not lspci -nn output (plain lspci prints no ids).
    """
    return read_lspci_nn(text)["devices"]


def read_lspci_nn(text):
    """{"devices": parse_lspci_nn's records, "unread": the device lines it could not read} - lspci output cut short
    ends in such a line, and a GPU on it would be missing without a word."""
    devices = []
    others = []
    for line in parsing.bounded(text)[0].splitlines():
        if not line.strip() or line[0].isspace():
            continue
        device = _parse_line(line)
        if device is None:
            others.append(line)
        else:
            devices.append(device)
    if others and not devices:
        raise PciParseError(
            f"lspci printed {len(others)} line(s) without a device address, class and [vendor:device] ids "
            f"(is it lspci -nn output?); first: {parsing.excerpt(others[0].strip(), 200)}"
        )
    return {"devices": sorted(devices, key=_address_key), "unread": others}


def unread_finding(unread):
    """The warning for lines of lspci output that held no device record, or None."""
    if not unread:
        return None
    return {
        "severity": "warning",
        "code": "lspci_lines_unread",
        "message": (
            f"lspci printed {len(unread)} line(s) this module could not read as a device (output cut short?); "
            f"a device on them is missing from these facts: {parsing.excerpt(unread[-1].strip())}"
        ),
    }


def _ids(rest):
    """(description, vendor, device) of what follows the class: the first [vendor:device] pair after which only
    parenthesised notes ("(rev a1)", "(prog-if 00 [VGA controller])") follow; None without one."""
    trimmed = rest.rstrip()
    for pair in _ID_PAIR.finditer(trimmed):
        if pair.end() < len(trimmed):
            after = _NOT_BLANK.search(trimmed, pair.end())
            if trimmed[after.start()] != "(" or not trimmed.endswith(")"):
                continue
        return trimmed[: pair.start()], pair.group("vendor"), pair.group("device")
    return None


def _parse_line(line):
    match = _LINE.fullmatch(line.rstrip())
    if match is None:
        return None
    ids = _ids(match.group("rest"))
    if ids is None:
        return None
    head = match.group("head")
    number = _CLASS.search(head)
    class_name = head[: number.start()] if number else head
    if "[" in class_name or "]" in class_name or not class_name.strip():
        return None
    class_id = int(number.group("class"), 16) if number else CLASS_NAMES.get(_lower(class_name))
    description_text, vendor_hex, device_hex = ids
    vendor = int(vendor_hex, 16)
    description = " ".join(description_text.split()) or None
    return {
        "address": _address(
            match.group("domain") or "0000", match.group("bus"), match.group("slot"), match.group("function")
        ),
        "class_id": class_id,
        "vendor_id": vendor,
        "device_id": int(device_hex, 16),
        "description": description,
        "name": device_name(description, vendor),
    }


def device_name(description, vendor_id):
    """The device part of lspci's "<vendor name> <device name>"; None for lspci's "Device" (not in pci.ids)."""
    if not description:
        return None
    vendor_name = VENDOR_NAMES.get(vendor_id)
    name = description
    if vendor_name and name.startswith(vendor_name + " "):
        name = name[len(vendor_name) + 1 :]
    return None if name in ("Device", "") else name


def read_sysfs(reader, devices_dir=SYSFS_DEVICES):
    """Device records from <sysfs root>/bus/pci/devices/*/{vendor,device,class} through a RootedReader.

    sysfs has no names: description and name are null. A function whose files
    cannot be read or parsed is left out; an unreadable directory gives [].
    """
    devices = []
    for entry in reader.listdir(devices_dir):
        base = f"{devices_dir}/{entry}"
        vendor = _hex(reader.read(f"{base}/vendor"))
        device = _hex(reader.read(f"{base}/device"))
        klass = _hex(reader.read(f"{base}/class"))
        address = _normal_address(entry)
        if None in (vendor, device, klass) or address is None:
            continue
        devices.append(
            {
                "address": address,
                # sysfs prints class, subclass and programming interface (0x030200); lspci's class is the first two.
                "class_id": klass >> 8,
                "vendor_id": vendor,
                "device_id": device,
                "description": None,
                "name": None,
            }
        )
    return sorted(devices, key=_address_key)


def inventory(devices):
    """{"gpus", "nvswitches", "rdma_nics", "open_modules"} from device records, each list sorted by address.

    GPUs are NVIDIA functions of class 0x0300 (VGA) or 0x0302 (3D controller),
    with the catalog's product, architecture, compute capability and open kernel
    module support by PCI device id (all null for an id the catalog lacks).
    NVSwitches are NVIDIA functions of class 0x0680 (Bridge), how HGX A100 and
    H100/H200 baseboards show theirs. RDMA NICs are vendor 0x15b3 functions of
    class 0x0200 (Ethernet) or 0x0207 (InfiniBand), virtual functions included.
    NVIDIA audio (0x0403) and USB (0x0c03) functions are none of these.
    """
    gpus, nvswitches, nics = [], [], []
    for device in sorted(devices, key=_address_key):
        vendor, klass = device["vendor_id"], device["class_id"]
        if vendor == NVIDIA and klass in GPU_CLASSES:
            gpus.append(_gpu(device))
        elif vendor == NVIDIA and klass == BRIDGE_OTHER:
            nvswitches.append(
                {"address": device["address"], "device_id": _id(device["device_id"]), "name": device["name"]}
            )
        elif vendor == MELLANOX and klass in RDMA_CLASSES:
            nics.append(
                {
                    "address": device["address"],
                    "vendor_id": _id(vendor),
                    "device_id": _id(device["device_id"]),
                    "name": device["name"],
                }
            )
    return {"gpus": gpus, "nvswitches": nvswitches, "rdma_nics": nics, "open_modules": open_modules(gpus)}


def _gpu(device):
    entry = gpu_catalog.lookup(pci_device_id=device["device_id"]) or {}
    return {
        "address": device["address"],
        "device_id": _id(device["device_id"]),
        "name": device["name"],
        "product": entry.get("product"),
        "architecture": entry.get("architecture"),
        "compute_capability": entry.get("compute_capability"),
        "open_modules": entry.get("open_modules"),
    }


def open_modules(gpus):
    """The kernel module flavour that drives every GPU listed.

    "none" without GPUs; "mixed" when one GPU requires the open modules and
    another does not support them (no flavour drives both); else "unknown" when
    a GPU is not in the catalog (null open_modules); else "required" when any
    GPU requires the open modules (the others support them), "unsupported" when
    any does not support them (the others work with the proprietary ones), and
    "supported" when every GPU takes either.
    """
    if not gpus:
        return "none"
    values = {gpu["open_modules"] for gpu in gpus}
    if gpu_catalog.REQUIRED in values and gpu_catalog.UNSUPPORTED in values:
        return "mixed"
    if None in values or not values <= set(OPEN_MODULE_VALUES):
        return "unknown"
    for value in (gpu_catalog.REQUIRED, gpu_catalog.UNSUPPORTED):
        if value in values:
            return value
    return gpu_catalog.SUPPORTED


def _id(value):
    return f"0x{value:04x}"


def _hex(text):
    if text is None:
        return None
    return parsing.to_int(text, 16)


def _lower(text):
    return " ".join(text.split()).lower()


def _address(domain, bus, slot, function):
    return f"{domain.lower()}:{bus.lower()}:{slot.lower()}.{function}"


def _normal_address(name):
    match = re.fullmatch(r"(" + _HEX + r"{4,8}):(" + _HEX + r"{2}):(" + _HEX + r"{2})\.([0-7])", name)
    return _address(*match.groups()) if match else None


def _address_key(device):
    domain, bus, rest = device["address"].split(":")
    slot, function = rest.split(".")
    return (int(domain, 16), int(bus, 16), int(slot, 16), int(function))
