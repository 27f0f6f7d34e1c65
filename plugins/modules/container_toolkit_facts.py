#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_toolkit_facts
short_description: Read the NVIDIA Container Toolkit's state - nvidia-ctk's version, CDI devices, runtimes' configs
version_added: 0.1.0
description:
  - C(nvidia-ctk --version), C(nvidia-ctk cdi list), and the runtimes each container runtime's effective
    configuration names - containerd's from C(containerd config dump) (what containerd itself reads, imports merged),
    Docker's from C(/etc/docker/daemon.json), CRI-O's from its drop-in directory.
  - Changes nothing. Returns only C(ansible_facts.container_toolkit). A tool that fails is reported in C(errors),
    not as a module failure, so a verification can say what is wrong.
author: gpuops.bringup developers (@gpuops)
options:
  runtimes:
    description: The container runtimes whose configuration to read.
    type: list
    elements: str
    choices: [containerd, docker, crio]
    default: []
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
  - gpuops.bringup.attributes.facts
"""

EXAMPLES = r"""
- name: Read the toolkit's state
  gpuops.bringup.container_toolkit_facts:
    runtimes: [containerd]

- name: Check that containerd names the nvidia runtime
  ansible.builtin.assert:
    that: __nvidia.binary == '/usr/bin/nvidia-container-runtime'
  vars:
    __nvidia: "{{ ansible_facts.container_toolkit.runtimes.containerd.runtimes.nvidia }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(container_toolkit).
  returned: always
  type: dict
  contains:
    container_toolkit:
      description: Everything read.
      type: dict
      contains:
        version:
          description: The version C(nvidia-ctk --version) prints (C(1.17.8)), or null without nvidia-ctk.
          type: str
        cdi_devices:
          description: The devices C(nvidia-ctk cdi list) finds (C(nvidia.com/gpu=0), C(nvidia.com/gpu=all)).
          type: list
          elements: str
        runtimes:
          description: >-
            Per requested runtime, C(runtimes) (name -> C(binary), C(type)) and C(default) (the default runtime's
            name) from its effective configuration.
          type: dict
        errors:
          description: What could not be read, one sentence each (a tool that failed, a file that does not parse).
          type: list
          elements: str
"""

import glob
import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import container_toolkit as ctk
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner

CRIO_DIRS = ("/etc/crio/crio.conf", "/etc/crio/crio.conf.d/*.conf", "/etc/crio/crio.conf.d/*.toml")


def run(module, tool, args, errors):
    """stdout of tool, or None (and a sentence in errors) when it is missing or fails."""
    runner = ToolRunner(module, tool, required=False)
    if not runner.available:
        errors.append(f"{tool} is not installed")
        return None
    rc, out, err = runner(args, ok_rc=tuple(range(256)))
    if rc != 0:
        errors.append(f"{tool} {' '.join(args)} failed (rc={rc}): {(err or out).strip()[-300:]}")
        return None
    return out


def containerd_runtimes(dump):
    # containerd 2.x dumps version 3, whatever version its files are in, with the runtimes in a plugin of their own.
    plugin = ctk.CRI_RUNTIME_PLUGIN if dump.get("version") == 3 else ctk.CRI_PLUGIN
    cri = ((dump.get("plugins") or {}).get(plugin) or {}).get("containerd") or {}
    runtimes = {
        name: {"type": r.get("runtime_type"), "binary": (r.get("options") or {}).get("BinaryName")}
        for name, r in (cri.get("runtimes") or {}).items()
    }
    return {"runtimes": runtimes, "default": cri.get("default_runtime_name")}


def docker_runtimes(text):
    data = json.loads(text) if text.strip() else {}
    runtimes = {name: {"type": "oci", "binary": r.get("path")} for name, r in (data.get("runtimes") or {}).items()}
    return {"runtimes": runtimes, "default": data.get("default-runtime", "runc")}


def crio_runtimes(texts):
    runtimes, default = {}, None
    for name, text in texts:
        runtime = (ctk.toml_loads(text, name).get("crio") or {}).get("runtime") or {}
        for key, r in (runtime.get("runtimes") or {}).items():
            runtimes[key] = {"type": r.get("runtime_type"), "binary": r.get("runtime_path")}
        default = runtime.get("default_runtime", default)
    return {"runtimes": runtimes, "default": default}


def read_runtime(module, runtime, errors):
    try:
        if runtime == "containerd":
            out = run(module, "containerd", ["config", "dump"], errors)
            return None if out is None else containerd_runtimes(ctk.toml_loads(out, "containerd config dump"))
        if runtime == "docker":
            try:
                with open("/etc/docker/daemon.json", encoding="utf-8") as handle:
                    return docker_runtimes(handle.read())
            except FileNotFoundError:
                return docker_runtimes("")
        texts = []
        for pattern in CRIO_DIRS:
            for path in sorted(glob.glob(pattern)):
                with open(path, encoding="utf-8") as handle:
                    texts.append((path, handle.read()))
        return crio_runtimes(texts)
    except (ctk.ConfigProblem, ValueError, AttributeError, RecursionError) as exc:
        errors.append(f"{runtime}'s configuration does not parse: {exc}")
        return None


def main():
    module = AnsibleModule(
        argument_spec={
            "runtimes": {"type": "list", "elements": "str", "choices": ["containerd", "docker", "crio"], "default": []}
        },
        supports_check_mode=True,
    )
    if ctk.tomllib_missing():
        module.fail_json(msg="reading runtime configurations needs Python 3.11 or later on the node (tomllib)")
    errors = []
    version_out = run(module, "nvidia-ctk", ["--version"], errors)
    cdi_out = run(module, "nvidia-ctk", ["cdi", "list"], errors) if version_out is not None else None
    facts = {
        "version": ctk.parse_ctk_version(version_out),
        "cdi_devices": ctk.parse_cdi_list(cdi_out),
        "runtimes": {r: read_runtime(module, r, errors) for r in module.params["runtimes"]},
        "errors": errors,
    }
    module.exit_json(changed=False, ansible_facts={"container_toolkit": facts})


if __name__ == "__main__":
    main()
