#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_facts
short_description: Read the NVIDIA kernel driver's state - DKMS builds per kernel, their logs, the loaded module
version_added: 0.1.0
description:
  - Reads C(dkms status), the NVIDIA modules DKMS installed under C(/lib/modules/<kernel>) (C(updates/dkms), C(extra)
    on RHEL, or the package's own C(kernel/drivers/video)), which kernels
    have headers to build against, the errors of a failed DKMS build from its C(make.log), the loaded module's version
    and flavour (C(/sys/module/nvidia/version), C(/proc/driver/nvidia/version)), the C(/dev/nvidia*) device nodes, and
    whether NVIDIA's C(.run) installer put a driver on the node.
  - Works before, during and after a driver installation; nothing it reads needs the driver loaded.
  - Changes nothing. Returns only C(ansible_facts.nvidia_driver).
author: gpuops.bringup developers (@gpuops)
options:
  dkms_modules:
    description:
      - DKMS module names to report (C(nvidia-tesla-535), C(nvidia-current-open)). Empty - every DKMS module whose
        name starts with C(nvidia).
    type: list
    elements: str
    default: []
  kernels:
    description:
      - Kernel versions whose headers and installed module files to report. Empty - every directory of
        C(/lib/modules).
    type: list
    elements: str
    default: []
  error_limit:
    description: The most compiler errors reported per build log.
    type: int
    default: 8
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
  - gpuops.bringup.attributes.facts
notes:
  - In a container, C(/sys/module) and C(/proc/driver) are the container host's; the caller decides with
    C(gpuops.bringup.os_facts) capabilities (C(own_kernel)) whether the loaded module belongs to this node.
  - DKMS keeps the C(build/make.log) of a module version only while its last build failed (a successful build
    removes the build directory), so C(build_logs) lists failed builds.
seealso:
  - module: gpuops.bringup.os_facts
    description: Kernels installed and running, and whether this node owns its kernel.
"""

EXAMPLES = r"""
- name: Read the driver's state for the kernels the node boots
  gpuops.bringup.nvidia_driver_facts:
    dkms_modules: [nvidia-tesla-535]
    kernels: "{{ ansible_facts.gpuops_os.kernel.installed }}"

- name: Show why the last DKMS build failed
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia_driver.build_logs | map(attribute='errors') | flatten }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(nvidia_driver).
  returned: always
  type: dict
  contains:
    nvidia_driver:
      description: Everything read.
      type: dict
      contains:
        dkms_available:
          description: Whether the C(dkms) command is installed.
          type: bool
        dkms:
          description: >-
            C(dkms status) records of the reported modules - C(module), C(version), C(kernel) and C(arch) (null for a
            version only C(added)), C(state) (C(added), C(built), C(installed)...), C(note).
          type: list
          elements: dict
          sample:
            - {"module": "nvidia-tesla-535", "version": "535.274.02", "kernel": "6.12.117+deb13-amd64",
               "arch": "x86_64", "state": "installed", "note": ""}
        kernels:
          description: >-
            Per kernel version, C(headers) (C(/lib/modules/<kernel>/build) holds a kernel build tree DKMS can build
            against), C(module_files) (the C(nvidia*) files in DKMS's directories under C(/lib/modules/<kernel>)) and,
            for each module of O(dkms_modules), C(dkms_modules.<name>) with C(files) (its five modules' files found -
            C(<name>), C(<name>-modeset), C(-drm), C(-uvm), C(-peermem), as C(.ko), C(.ko.xz), C(.ko.zst) or C(.ko.gz))
            and C(missing) (those of the five without a file).
          type: dict
        build_logs:
          description: >-
            Failed DKMS builds, from C(/var/lib/dkms/<module>/<version>/build/make.log) - C(module), C(version),
            C(kernel), C(arch), C(path), C(exit_code), C(errors) (compiler errors with their context, build paths
            shortened, typographic quotes made ASCII), C(error_count) and C(summary) (the errors on one line).
          type: list
          elements: dict
        loaded:
          description: >-
            The loaded NVIDIA module - C(version) (null when none is loaded), C(flavor) (C(open), C(proprietary) or
            null), C(modules) (loaded NVIDIA modules, as /proc/modules names them).
          type: dict
        devices:
          description: The C(/dev/nvidia*) device nodes.
          type: list
          elements: str
        runfile:
          description: C(installed) - NVIDIA's .run installer left C(/usr/bin/nvidia-uninstall) on the node.
          type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import dkms
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner
from ansible_collections.gpuops.bringup.plugins.module_utils.rooted import RootedReader


class DriverReader(RootedReader):
    """File and command access, rooted so unit tests can point it at a captured tree."""

    def __init__(self, module, root="/"):
        super().__init__(root)
        self.module = module

    def dkms_status(self):
        tool = ToolRunner(self.module, "dkms", required=False)
        if not tool.available:
            return None
        _rc, out, _err = tool(["status"])
        return out


def gather(reader, params):
    wanted = set(params["dkms_modules"])

    def reported(name):
        return name in wanted if wanted else name.startswith("nvidia")

    status = reader.dkms_status()
    records = [r for r in dkms.parse_dkms_status(status or "") if reported(r["module"])]

    kernels = params["kernels"] or reader.listdir("/lib/modules")
    kernel_state = {}
    for kernel in kernels:
        base = f"/lib/modules/{kernel}"
        files = sorted(
            n
            for directory in dkms.DKMS_MODULE_DIRS
            for n in reader.listdir(f"{base}/{directory}")
            if n.startswith("nvidia")
        )
        per_module = {}
        for name in sorted(wanted):
            present, missing = dkms.module_files(files, name)
            per_module[name] = {"files": present, "missing": missing}
        kernel_state[kernel] = {
            "headers": reader.exists(f"{base}/build/Makefile"),
            "module_files": files,
            "dkms_modules": per_module,
        }

    logs = []
    for module in reader.listdir(dkms.DKMS_TREE):
        if not reported(module):
            continue
        for version in reader.listdir(f"{dkms.DKMS_TREE}/{module}"):
            build_dir = f"{dkms.DKMS_TREE}/{module}/{version}/build"
            text = reader.read(f"{build_dir}/make.log")
            if text is None:
                continue
            log = dkms.parse_make_log(text, build_dir=build_dir, limit=params["error_limit"])
            logs.append({"module": module, "version": version, "path": f"{build_dir}/make.log", **log})

    nvrm = dkms.parse_nvrm_version(reader.read("/proc/driver/nvidia/version", ""))
    version = (reader.read("/sys/module/nvidia/version") or "").strip() or (nvrm or {}).get("version")
    return {
        "dkms_available": status is not None,
        "dkms": records,
        "kernels": kernel_state,
        "build_logs": logs,
        "loaded": {
            "version": version or None,
            "flavor": (nvrm or {}).get("flavor") if version else None,
            "modules": dkms.loaded_nvidia_modules(reader.read("/proc/modules", "")),
        },
        "devices": [f"/dev/{n}" for n in reader.listdir("/dev") if n.startswith("nvidia")],
        "runfile": {"installed": reader.exists("/usr/bin/nvidia-uninstall")},
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "dkms_modules": {"type": "list", "elements": "str", "default": []},
            "kernels": {"type": "list", "elements": "str", "default": []},
            "error_limit": {"type": "int", "default": 8},
        },
        supports_check_mode=True,
    )
    facts = gather(DriverReader(module), module.params)
    module.exit_json(changed=False, ansible_facts={"nvidia_driver": facts})


if __name__ == "__main__":
    main()
