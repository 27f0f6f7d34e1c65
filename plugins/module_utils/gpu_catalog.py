# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA GPU products and CUDA driver requirements, kept as data.

lookup() answers, for a product name as nvidia-smi prints it or a PCI device
id, the architecture, compute capability and whether NVIDIA's open kernel
modules are required, supported or unsupported. cuda_min_driver() answers
the minimum Linux driver a CUDA toolkit version needs. Sources are cited next
to each table.
"""

from __future__ import annotations

import re

# Skeleton: the full tables and their sources land with the gpu_arch and
# cuda_min_driver filters.
PRODUCTS = (
    # (name pattern, architecture, compute capability, open kernel modules, PCI device ids)
    (r"\bH100\b", "hopper", "9.0", "supported", ()),
    (r"\bH200\b", "hopper", "9.0", "supported", ()),
    (r"\bA100\b", "ampere", "8.0", "supported", ()),
    (r"\bV100", "volta", "7.0", "unsupported", ()),
    (r"\bT4\b", "turing", "7.5", "supported", ()),
    (r"\bL40S\b", "ada", "8.9", "supported", ()),
    (r"\bA10G?\b", "ampere", "8.6", "supported", ()),
)


def lookup(product_name=None, pci_device_id=None):
    """The catalog entry for a product name or PCI device id (0x2330, 2330, 0x233010DE), or None.

    Returns {"product", "architecture", "compute_capability", "open_modules"}.
    """
    device = _device_id(pci_device_id) if pci_device_id else None
    for pattern, architecture, capability, open_modules, ids in PRODUCTS:
        if (device is not None and device in ids) or (product_name and re.search(pattern, product_name)):
            return {
                "product": product_name or "",
                "architecture": architecture,
                "compute_capability": capability,
                "open_modules": open_modules,
            }
    return None


def _device_id(value):
    """The 16-bit device id from 0x2330, 2330 or nvidia-smi's 0x233010DE (device id, then vendor 10DE)."""
    text = str(value).lower()
    if text.startswith("0x"):
        text = text[2:]
    if len(text) == 8 and text.endswith("10de"):
        text = text[:4]
    try:
        return int(text, 16)
    except ValueError:
        return None
