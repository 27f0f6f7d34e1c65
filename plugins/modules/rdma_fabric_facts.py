#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_fabric_facts
short_description: Read what GPUDirect RDMA and NCCL need from the RDMA stack, in one round trip
version_added: 0.1.0
description:
  - For each kernel given, finds the NVIDIA driver's DKMS build of C(nvidia-peermem) and the C(ib_core) of
    DOCA-OFED, with their modification times, and decides whether C(nvidia-peermem) is usable or must be rebuilt
    because OFED was installed or updated after the driver was built.
  - Reads whether C(nvidia-peermem) is loaded, the network interfaces present and each RDMA port's GID table (to
    pick the GID index NCCL uses on RoCE).
  - Changes nothing. Returns only C(ansible_facts.rdma_fabric).
author: gpuops.bringup developers (@gpuops)
options:
  stack:
    description: The RDMA stack the node runs, C(inbox) (the kernel's own with rdma-core) or C(doca) (DOCA-OFED).
    type: str
    choices: [inbox, doca]
    default: inbox
  kernels:
    description: Kernel versions the node may boot (C(gpuops.bringup.os_facts)' C(kernel.installed)).
    type: list
    elements: str
    default: []
  owned_files:
    description:
      - Absolute paths whose last component may hold shell wildcards (C(/etc/systemd/network/60-gpuops-*.network));
        the files and links there are listed in C(owned_files), so that the caller can remove those it no longer
        wants.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
  - gpuops.bringup.attributes.facts
notes:
  - In a container, C(/proc/modules) and C(/sys/class/infiniband) are the container host's; the caller decides with
    C(gpuops.bringup.os_facts) capabilities (C(own_kernel)) whether they belong to this node.
seealso:
  - module: gpuops.bringup.nvidia_driver_facts
  - module: gpuops.bringup.ib_facts
"""

EXAMPLES = r"""
- name: Read the RDMA stack's state for the kernels the node boots
  gpuops.bringup.rdma_fabric_facts:
    stack: doca
    kernels: "{{ ansible_facts.gpuops_os.kernel.installed }}"

- name: Rebuild the driver's DKMS modules that predate OFED
  ansible.builtin.debug:
    msg: "{{ ansible_facts.rdma_fabric.peermem.rebuild }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(rdma_fabric).
  returned: always
  type: dict
  contains:
    rdma_fabric:
      description: Everything read.
      type: dict
      contains:
        owned_files:
          description: The paths matching C(owned_files), sorted.
          type: list
          elements: str
        driver_dkms_version:
          description: >-
            The version DKMS holds the driver's module under (C(/var/lib/dkms/<driver_module>/<version>)), which a
            rebuild names; null when DKMS has none.
          type: str
        ib_core:
          description: >-
            The loaded C(ib_core) - C(loaded) (in C(/proc/modules)), C(version) (C(/sys/module/ib_core/version):
            OFED's carry one, the kernel's own none), C(srcversion) (C(/sys/module/ib_core/srcversion), the hash of
            the loaded module's source) and C(installed_srcversion) (C(modinfo -F srcversion) of OFED's
            C(ib_core) installed for the running kernel); each null when absent. The two hashes differ when OFED
            changed on disk after the loaded module was loaded (not yet booted into).
          type: dict
        driver_module:
          description: >-
            The NVIDIA driver's DKMS module name (C(nvidia-tesla-535), C(nvidia-current), C(nvidia)), from the module
            files under C(/lib/modules/<kernel>/updates/dkms); null when none is installed.
          type: str
        kernels:
          description: >-
            Per kernel, C(peermem) and C(ofed_ib_core), each C(path) and C(mtime) (seconds since the epoch) or
            null.
          type: dict
        peermem:
          description: >-
            The decision - C(module) (the name to load), C(status) (C(ready), C(no_driver), C(rebuild),
            C(problem)), C(rebuild) (kernels whose driver build predates OFED), C(problems) (sentences), C(kernels)
            (status per kernel), and C(loaded) (the module is in C(/proc/modules)).
          type: dict
        netdevs:
          description: Names under C(/sys/class/net).
          type: list
          elements: str
        gids:
          description: >-
            Per RDMA device and port, the non-zero GID entries - C(index), C(gid), C(type) (C(RoCE v2),
            C(IB/RoCE v1)), C(ndev).
          type: dict
        roce_gid_indexes:
          description: >-
            The GID index NCCL should use on each RoCE port that has one (the lowest RoCE v2 entry with an IPv4
            address), as C(<device>/<port>): index; ports without such an entry are left out.
          type: dict
"""

import fnmatch
import os
import posixpath
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, parsing, rdma_fabric
from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import RootedReader

_KO = re.compile(r"^(?P<stem>.+)\.ko(?:\.(?:xz|zst|gz))?$")
_ZERO_GID = re.compile(r"^[0:]+$")


def _stems(names):
    return {m.group("stem"): name for name in names if (m := _KO.match(name))}


def _file(reader, path):
    mtime = reader.mtime(path)
    return None if mtime is None else {"path": path, "mtime": mtime}


def _find(reader, directory, stem, depth=2):
    """The first <stem>.ko* under directory, DKMS's own subdirectories (OFED's updates/dkms/...) included."""
    names = reader.listdir(directory)
    found = _stems(names).get(stem)
    if found:
        return _file(reader, f"{directory}/{found}")
    if depth:
        for name in names:
            hit = _find(reader, f"{directory}/{name}", stem, depth - 1) if not _KO.match(name) else None
            if hit:
                return hit
    return None


def driver_module(reader, kernels):
    """The main NVIDIA module's stem: the nvidia* module beside which a <stem>-uvm module was built."""
    for kernel in kernels:
        stems = _stems(reader.listdir(f"/lib/modules/{kernel}/updates/dkms"))
        for stem in sorted(stems):
            if stem.startswith("nvidia") and f"{stem}-uvm" in stems:
                return stem
    return None


def ib_core(reader, loaded, ofed_file, srcversion):
    """The loaded ib_core and, when it is OFED's, the source hash of ofed_file: OFED's ib_core on disk for the running
    kernel, as gather found it for the node's kernels (os_facts lists every kernel with files under /lib/modules, so
    a running kernel OFED built for is among them), or None."""
    version = (reader.read("/sys/module/ib_core/version") or "").strip() or None
    installed = srcversion(reader.path(ofed_file["path"])) if loaded and version and ofed_file else None
    return {
        "loaded": loaded,
        "version": version,
        "srcversion": (reader.read("/sys/module/ib_core/srcversion") or "").strip() or None,
        "installed_srcversion": installed,
    }


def read_gids(reader):
    gids = {}
    for device in reader.listdir("/sys/class/infiniband"):
        base = f"/sys/class/infiniband/{device}/ports"
        for port in reader.listdir(base):
            entries = []
            for index in reader.listdir(f"{base}/{port}/gids"):
                gid = (reader.read(f"{base}/{port}/gids/{index}") or "").strip()
                # An ASCII index only: '²'.isdigit() is true and int('²') fails.
                if not parsing.is_digits(index) or len(index) > 6 or not gid or _ZERO_GID.match(gid):
                    continue
                entries.append(
                    {
                        "index": int(index),
                        "gid": gid,
                        "type": (reader.read(f"{base}/{port}/gid_attrs/types/{index}") or "").strip() or None,
                        "ndev": (reader.read(f"{base}/{port}/gid_attrs/ndevs/{index}") or "").strip() or None,
                    }
                )
            gids.setdefault(device, {})[port] = sorted(entries, key=lambda e: e["index"])
    return gids


def owned_files(reader, patterns):
    """The paths matching patterns, each a directory and a name with shell wildcards."""
    found = set()
    for pattern in patterns:
        directory, name = posixpath.split(pattern)
        found.update(f"{directory}/{entry}" for entry in reader.listdir(directory) if fnmatch.fnmatchcase(entry, name))
    return sorted(found)


def gather(reader, params, running_kernel, srcversion):
    """Everything the role reads; srcversion(path) is a module file's source hash (modinfo), or None."""
    kernels = params["kernels"]
    module = driver_module(reader, kernels)
    state = {}
    for kernel in kernels:
        updates = f"/lib/modules/{kernel}/updates"
        state[kernel] = {
            "peermem": _find(reader, f"{updates}/dkms", f"{module}{rdma_fabric.PEERMEM_SUFFIX}", 0) if module else None,
            "ofed_ib_core": _find(reader, updates, "ib_core"),
        }
    plan = rdma_fabric.peermem_plan(params["stack"], module, state)
    loaded = {line.split(" ", 1)[0] for line in (reader.read("/proc/modules") or "").splitlines() if line}
    plan["loaded"] = bool(plan["module"]) and plan["module"].replace("-", "_") in loaded
    gids = read_gids(reader)
    versions = [name for name in reader.listdir(f"/var/lib/dkms/{module}") if name[:1].isdigit()] if module else []
    return {
        "driver_module": module,
        # One version per DKMS module is what the driver role leaves; the newest should there be more.
        "driver_dkms_version": apt.newest(versions),
        "ib_core": ib_core(reader, "ib_core" in loaded, state.get(running_kernel, {}).get("ofed_ib_core"), srcversion),
        "kernels": state,
        "peermem": plan,
        "netdevs": reader.listdir("/sys/class/net"),
        "owned_files": owned_files(reader, params.get("owned_files") or []),
        "gids": gids,
        "roce_gid_indexes": {
            f"{device}/{port}": index
            for device, ports in gids.items()
            for port, entries in ports.items()
            if (index := rdma_fabric.roce_gid_index(entries)) is not None
        },
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "stack": {"type": "str", "choices": ["inbox", "doca"], "default": "inbox"},
            "kernels": {"type": "list", "elements": "str", "default": []},
            "owned_files": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )

    def srcversion(path):
        rc, out, _err = module.run_command(["modinfo", "-F", "srcversion", path])
        return (out.strip() or None) if rc == 0 else None

    facts = gather(RootedReader(), module.params, os.uname().release, srcversion)
    module.exit_json(changed=False, ansible_facts={"rdma_fabric": facts})


if __name__ == "__main__":
    main()
