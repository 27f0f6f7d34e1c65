"""sysfs PCI trees for the pci tests, from the fixtures of tests/fixtures/pci (tests/fixtures/SOURCES.md).

materialise_grep() writes the tree a real `grep -H . */vendor */device
*/class` capture was taken from (each value plus the newline sysfs ends its
files with). derive_sysfs() writes the tree a kernel would show for the
functions of a captured lspci -nn output; it is a declared derivation, used
where no sysfs capture of the same host exists (see its docstring).
"""

from __future__ import annotations

from pathlib import Path

from ansible_collections.gpuops.bringup.plugins.module_utils import pci

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pci"
DEVICES = Path("bus") / "pci" / "devices"


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def materialise_grep(name, root):
    """The tree under root that `cd <root>/bus/pci/devices && grep -H . */vendor */device */class` printed as name."""
    for line in fixture(name).splitlines():
        path, value = _split_grep(line)
        target = root / DEVICES / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(value + "\n")
    return root


def _split_grep(line):
    # "0000:00:01.0/vendor:0x1af4": the address holds colons too; the value starts after the first one past "/".
    slash = line.index("/")
    colon = line.index(":", slash)
    return line[:colon], line[colon + 1 :]


def derive_sysfs(lspci_text, root):
    """Write bus/pci/devices/<address>/{vendor,device,class} for every function of an lspci -nn capture.

    vendor and device are the [vendor:device] ids as sysfs prints them
    (0x10de); class is lspci's class number with programming interface 00
    (0x030200). lspci -nn does not print the programming interface; 00 is what
    the GPUs, NVSwitches and NICs here have (an H100's config space reads
    class 03, subclass 02, interface 00: `hexdump .../config` on
    https://landontclipp.github.io/sysadmin/gpu).
    """
    for device in pci.parse_lspci_nn(lspci_text):
        base = root / DEVICES / device["address"]
        base.mkdir(parents=True, exist_ok=True)
        (base / "vendor").write_text(f"0x{device['vendor_id']:04x}\n")
        (base / "device").write_text(f"0x{device['device_id']:04x}\n")
        (base / "class").write_text(f"0x{device['class_id']:04x}00\n")
    return root
