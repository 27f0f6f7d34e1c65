#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pci_facts
short_description: Inventory a node's NVIDIA GPUs, NVSwitches and RDMA NICs from PCI, before any driver
version_added: 0.1.0
description:
  - Lists the node's NVIDIA GPUs, NVSwitches and NVIDIA/Mellanox RDMA NICs from the PCI bus, with no NVIDIA driver
    needed, so a driver role can choose the open or proprietary kernel modules (through the collection's GPU catalog)
    and see whether the node has NVSwitches, which need fabric manager.
  - Runs C(lspci -Dnn) when lspci (pciutils) is installed, since it also gives the devices' names. Without lspci, reads
    C(bus/pci/devices/*/vendor), C(device) and C(class) under O(sysfs_root); names are then null.
  - lspci exiting with a non-zero status, or printing something that is not C(lspci -nn) output, fails the task with
    the command, its return code and both output streams. No lspci and no readable sysfs gives empty lists (a node
    without PCI access is unusual, not an error).
  - Changes nothing. Returns only C(ansible_facts.pci).
author: gpuops.bringup developers (@gpuops)
options:
  sysfs_root:
    description:
      - Where sysfs is mounted; read only when lspci is not installed.
    type: path
    default: /sys
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
  - gpuops.bringup.attributes.facts
notes:
  - lspci runs with C(LANG=C). GPUs are NVIDIA (vendor C(0x10de)) functions of class C(0x0300) (VGA) or C(0x0302) (3D
    controller); NVSwitches are NVIDIA functions of class C(0x0680) (Bridge), how HGX A100 (C(0x1af1)) and HGX H100
    and H200 (C(0x22a3)) baseboards show them; RDMA NICs are vendor C(0x15b3) functions of class C(0x0200) (Ethernet)
    or C(0x0207) (InfiniBand), virtual functions included. NVIDIA audio and USB functions are none of these.
  - On HGX B200 and later boards fabric manager reaches the NVSwitches through ConnectX-7 functions, with NVLink Subnet
    Manager (NVIDIA Fabric Manager user guide), and they need not show as NVIDIA class C(0x0680) functions; there an
    empty C(nvswitches) list does not prove that the node needs no fabric manager.
  - A GPU's product, architecture, compute capability and open kernel module support come from the collection's GPU
    catalog (the one the C(gpu_arch) filter uses) by PCI device id; all are null for an id the catalog does not list.
seealso:
  - module: gpuops.bringup.gpu_facts
    description: The GPUs as the driver sees them, once it is installed.
  - name: NVIDIA driver installation guide, Kernel Modules
    description: Which GPUs need, support or cannot use the open kernel modules.
    link: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html
"""

EXAMPLES = r"""
- name: Inventory the node's PCI devices before installing a driver
  gpuops.bringup.pci_facts:

- name: Say which kernel module flavour every GPU of the node takes
  ansible.builtin.debug:
    msg: "open kernel modules: {{ ansible_facts.pci.open_modules in ['required', 'supported'] }}"

- name: Stop when no flavour fits every GPU, or a GPU is not in the catalog
  ansible.builtin.assert:
    that: ansible_facts.pci.open_modules not in ['mixed', 'unknown']
    fail_msg: >-
      open_modules is {{ ansible_facts.pci.open_modules }} for
      {{ ansible_facts.pci.gpus | map(attribute='device_id') | unique | join(', ') }}

- name: Fabric manager is needed where the GPUs share NVSwitches
  ansible.builtin.debug:
    msg: "{{ ansible_facts.pci.nvswitches | length }} NVSwitch(es)"
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(pci).
  returned: always
  type: dict
  contains:
    pci:
      description: Everything read.
      type: dict
      contains:
        gpus:
          description: NVIDIA GPUs, sorted by PCI address.
          type: list
          elements: dict
          contains:
            address:
              description: PCI address (domain:bus:device.function, lower case).
              type: str
              sample: "0000:1b:00.0"
            device_id:
              description: PCI device id.
              type: str
              sample: "0x2330"
            name:
              description: The device name lspci prints; null from sysfs or when lspci's pci.ids does not know the id.
              type: str
              sample: GH100 [H100 SXM5 80GB]
            product:
              description: The product name nvidia-smi prints, from the GPU catalog; null when the catalog lacks the id.
              type: str
              sample: NVIDIA H100 80GB HBM3
            architecture:
              description: Architecture (C(volta), C(ampere), C(hopper), C(blackwell)...); null when not in the catalog.
              type: str
              sample: hopper
            compute_capability:
              description: CUDA compute capability; null when not in the catalog.
              type: str
              sample: "9.0"
            open_modules:
              description: >-
                Whether the GPU needs (C(required)), works with (C(supported)) or cannot use (C(unsupported)) NVIDIA's
                open kernel modules; null when the GPU is not in the catalog.
              type: str
              sample: supported
        nvswitches:
          description: >-
            NVIDIA NVSwitches on the PCI bus (class 0x0680), sorted by address; C(address), C(device_id) and C(name)
            as for C(gpus).
          type: list
          elements: dict
          sample:
            - {"address": "0000:07:00.0", "device_id": "0x22a3", "name": "GH100 [H100 NVSwitch]"}
        rdma_nics:
          description: >-
            NVIDIA (Mellanox) network functions of class 0x0200 or 0x0207, sorted by address; C(address),
            C(vendor_id) (always C(0x15b3)), C(device_id), C(name).
          type: list
          elements: dict
          sample:
            - {"address": "0000:18:00.0", "vendor_id": "0x15b3", "device_id": "0x1021",
               "name": "MT2910 Family [ConnectX-7]"}
        open_modules:
          description: >-
            The kernel module flavour for all GPUs together. C(required) (some GPU needs the open modules, the others
            support them), C(supported) (every GPU works with either), C(unsupported) (some GPU needs the proprietary
            modules, the others work with them), C(mixed) (one GPU needs the open modules and another cannot use
            them), C(unknown) (a GPU is not in the catalog), C(none) (no NVIDIA GPU).
          type: str
          sample: supported
        source:
          description: C(lspci) when lspci ran, C(sysfs) when it is not installed.
          type: str
          sample: lspci
        findings:
          description: >-
            What may be missing from these facts, each C(severity), C(code) and C(message) - C(lspci_lines_unread)
            (a warning) when lspci printed device lines the module could not read, as output cut short ends in one.
          type: list
          elements: dict
          sample: []
        simulated:
          description: >-
            False on real hardware; on the collection's simulated-hardware bench, the marker's content
            (C(profile), C(captures)), so reports can say their data was replayed.
          type: raw
          sample: false
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import pci, simulation
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner
from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import RootedReader


def gather(module, params, simulated=False):
    """The pci facts: lspci -Dnn where installed, else sysfs under params["sysfs_root"]."""
    lspci = ToolRunner(module, "lspci", required=False)
    if lspci.available:
        rc, out, err = lspci(list(pci.LSPCI_ARGS))
        try:
            read = pci.read_lspci_nn(out)
        except pci.PciParseError as exc:
            module.fail_json(msg=str(exc), cmd=[lspci.path, *pci.LSPCI_ARGS], rc=rc, stdout=out, stderr=err)
        devices, unread = read["devices"], pci.unread_finding(read["unread"])
        source = "lspci"
    else:
        devices, unread = pci.read_sysfs(RootedReader(params["sysfs_root"])), None
        source = "sysfs"
    findings = [unread] if unread else []
    return {**pci.inventory(devices), "source": source, "findings": findings, "simulated": simulated}


def main():
    module = AnsibleModule(
        argument_spec={"sysfs_root": {"type": "path", "default": "/sys"}},
        supports_check_mode=True,
    )
    module.exit_json(changed=False, ansible_facts={"pci": gather(module, module.params, simulation.simulated())})


if __name__ == "__main__":
    main()
