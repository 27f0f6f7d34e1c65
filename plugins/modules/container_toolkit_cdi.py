#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_toolkit_cdi
short_description: Generate the NVIDIA CDI spec with nvidia-ctk, again whenever the driver or the GPUs change
version_added: 0.1.0
description:
  - Runs C(nvidia-ctk cdi generate --output=<spec>) when the spec is missing or was generated for another driver
    version, GPU set or toolkit version, or was edited since. A spec names the driver's libraries by version, so one
    generated for an older driver points containers at files that no longer exist.
  - What each generation was for (driver version, GPU UUIDs, toolkit version, the spec's SHA-256) is written to
    O(record); the next run compares it with what the caller read from the node now.
author: gpuops.bringup developers (@gpuops)
options:
  spec:
    description: The CDI spec to write.
    type: path
    default: /etc/cdi/nvidia.yaml
  record:
    description: Where the module records what the spec was generated for.
    type: path
    default: /var/lib/gpuops/nvidia_container_toolkit/cdi.json
  driver_version:
    description: The driver version the GPUs report now (C(nvidia-smi), gpu_facts' C(driver_version)).
    type: str
    required: true
  gpus:
    description: The UUIDs of the GPUs the driver reports now.
    type: list
    elements: str
    required: true
  toolkit_version:
    description: The installed toolkit's version (C(nvidia-ctk --version)).
    type: str
    required: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
"""

EXAMPLES = r"""
- name: The CDI spec, regenerated when the driver changes
  gpuops.bringup.container_toolkit_cdi:
    driver_version: "{{ ansible_facts.gpu.driver_version }}"
    gpus: "{{ ansible_facts.gpu.devices | map(attribute='uuid') | list }}"
    toolkit_version: 1.17.8
"""

RETURN = r"""
reason:
  description: Why the spec was (or, in check mode, would be) generated; null when it was up to date.
  returned: always
  type: str
  sample: the driver changed from 550.163.01 to 570.172.08
record:
  description: What the spec is generated for, after the run.
  returned: always
  type: dict
  sample: {driver_version: 570.172.08, gpus: [GPU-eaf0bc12-3996-9441-6965-b6955608929c], toolkit_version: 1.17.8,
           spec_sha256: 0f3c...}
"""

import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import container_toolkit as ctk
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner


def sha256(path):
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except FileNotFoundError:
        return None


def read_record(path):
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def main():
    module = AnsibleModule(
        argument_spec={
            "spec": {"type": "path", "default": "/etc/cdi/nvidia.yaml"},
            "record": {"type": "path", "default": "/var/lib/gpuops/nvidia_container_toolkit/cdi.json"},
            "driver_version": {"type": "str", "required": True},
            "gpus": {"type": "list", "elements": "str", "required": True},
            "toolkit_version": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    record = read_record(p["record"])
    reason = ctk.cdi_regenerate_reason(record, sha256(p["spec"]), p["driver_version"], p["gpus"], p["toolkit_version"])
    if reason is None or module.check_mode:
        module.exit_json(changed=reason is not None, reason=reason, record=record)
    ToolRunner(module, "nvidia-ctk")(["cdi", "generate", f"--output={p['spec']}"])
    record = {
        "driver_version": p["driver_version"],
        "gpus": sorted(p["gpus"]),
        "toolkit_version": p["toolkit_version"],
        "spec_sha256": sha256(p["spec"]),
    }
    os.makedirs(os.path.dirname(p["record"]), mode=0o755, exist_ok=True)
    tmp = f"{p['record']}.gpuops-tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.write("\n")
    module.atomic_move(tmp, p["record"])
    module.exit_json(changed=True, reason=reason, record=record)


if __name__ == "__main__":
    main()
