#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ib_facts
short_description: Read InfiniBand and RoCE adapters and their ports, and check them against expectations
version_added: 0.1.0
description:
  - Reads every RDMA device under C(/sys/class/infiniband) (firmware, node GUID, and per port the state, physical
    state, rate, link layer and network interface) and, when it is installed, runs C(ibstat) to fill what sysfs
    could not give. sysfs is authoritative.
  - Compares the ports with the expectations given (active port count, rate, link layer) and reports findings;
    it never fails because of them, so a role can decide what a finding means.
  - Changes nothing. Returns only C(ansible_facts.infiniband).
author: gpuops.bringup developers (@gpuops)
options:
  sysfs_root:
    description:
      - Where sysfs is mounted. Tests point it at a captured tree.
      - C(ibstat) always reads the host's own C(/sys); set O(ibstat=false) when this names another tree.
    type: path
    default: /sys
  ibstat:
    description: Run C(ibstat) (infiniband-diags) when it is installed, to fill what sysfs lacks.
    type: bool
    default: true
  expected_active_ports:
    description: How many ports must be active (of O(expected_link_layer) when that is set).
    type: int
  expected_rate_gbps:
    description: Lowest acceptable rate of an active port, in Gb/s (400 for NDR, 200 for HDR).
    type: float
  expected_link_layer:
    description: Link layer of the fabric ports; active ports of the other layer are reported and not counted.
    type: str
    choices: [InfiniBand, Ethernet]
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
  - gpuops.bringup.attributes.facts
notes:
  - A host without RDMA devices returns an empty C(devices) list; that is a finding only when ports were expected.
  - C(ibstat) failing (a device it cannot open, for example) is a warning finding, not a module failure.
"""

EXAMPLES = r"""
- name: Read the RDMA adapters
  gpuops.bringup.ib_facts:

- name: Expect eight NDR InfiniBand ports
  gpuops.bringup.ib_facts:
    expected_active_ports: 8
    expected_rate_gbps: 400
    expected_link_layer: InfiniBand

- name: Stop on any error finding
  ansible.builtin.assert:
    that: ansible_facts.infiniband.findings | selectattr('severity', 'equalto', 'error') | list | length == 0
    fail_msg: "{{ ansible_facts.infiniband.findings | map(attribute='message') | list }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(infiniband).
  returned: always
  type: dict
  contains:
    infiniband:
      description: Everything read.
      type: dict
      contains:
        devices:
          description: >-
            One entry per RDMA device, sorted by name (mlx5_2 before mlx5_10): C(name), C(ca_type) (MT4129...),
            C(fw_version), C(node_guid) (0x followed by 16 hex digits), C(board_id), C(sources) (sysfs, ibstat or
            both) and C(ports).
          type: list
          elements: dict
          sample:
            - name: mlx5_0
              ca_type: MT4129
              fw_version: 28.39.1002
              node_guid: "0x946dae0300cde72c"
              board_id: null
              sources: [sysfs, ibstat]
              ports:
                - port: 1
                  state: active
                  physical_state: link_up
                  rate_gbps: 400.0
                  link_layer: InfiniBand
                  netdev: ibp26s0
                  lid: 75
                  sm_lid: 334
                  port_guid: "0x946dae0300cde72c"
        findings:
          description: >-
            What the ports say against the expectations: C(severity) (error, warning, info), C(code)
            (no_devices, active_ports_low, rate_low, link_layer_mismatch, port_polling, port_not_active,
            port_disabled, port_down, ibstat_failed), C(device), C(port) and C(message).
          type: list
          elements: dict
        active_ports:
          description: Active ports, all link layers together.
          type: int
        ibstat:
          description: >-
            Whether C(ibstat) ran (C(ran)), its return code (C(rc)) and the ibpanic or ibwarn lines it printed
            (C(messages)).
          type: dict
        simulated:
          description: The simulated-hardware marker of the test bench, or false on real hardware.
          type: raw
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import infiniband, simulation
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner


def run_ibstat(module):
    """(devices, status) from ibstat; a failing ibstat is reported, not fatal: sysfs still answers."""
    tool = ToolRunner(module, "ibstat", required=False)
    if not tool.available:
        return [], {"ran": False, "rc": None, "messages": []}
    rc, out, err = tool([], ok_rc=infiniband.AnyReturnCode())
    parsed = infiniband.parse_ibstat(out)
    messages = parsed["messages"] + infiniband.parse_ibstat(err)["messages"]
    if rc != 0 and not messages:
        messages = [line.strip() for line in (err or out).splitlines() if line.strip()][-5:]
    return parsed["devices"], {"ran": True, "rc": rc, "messages": messages}


def gather(module, params, reader=None, read_marker=None):
    reader = reader or infiniband.SysfsReader(params["sysfs_root"])
    devices = infiniband.read_sysfs(reader)
    status = {"ran": False, "rc": None, "messages": []}
    if params["ibstat"]:
        ibstat_devices, status = run_ibstat(module)
        devices = infiniband.merge(devices, ibstat_devices)
    found = infiniband.findings(
        devices,
        expected_active_ports=params["expected_active_ports"],
        expected_rate_gbps=params["expected_rate_gbps"],
        expected_link_layer=params["expected_link_layer"],
    )
    if status["ran"] and status["rc"] != 0:
        detail = "; ".join(status["messages"]) or "no message"
        found.append(
            {
                "severity": "warning",
                "code": "ibstat_failed",
                "device": None,
                "port": None,
                "message": f"ibstat exited with {status['rc']}: {detail}",
            }
        )
    return {
        "devices": devices,
        "findings": found,
        "active_ports": infiniband.active_ports(devices),
        "ibstat": status,
        "simulated": simulation.simulated(read_marker),
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "sysfs_root": {"type": "path", "default": "/sys"},
            "ibstat": {"type": "bool", "default": True},
            "expected_active_ports": {"type": "int"},
            "expected_rate_gbps": {"type": "float"},
            "expected_link_layer": {"type": "str", "choices": ["InfiniBand", "Ethernet"]},
        },
        supports_check_mode=True,
    )
    if not os.path.isdir(module.params["sysfs_root"]):
        module.fail_json(msg=f"sysfs_root {module.params['sysfs_root']} is not a directory")
    if module.params["expected_active_ports"] is not None and module.params["expected_active_ports"] < 0:
        module.fail_json(msg=f"expected_active_ports must be 0 or more, got {module.params['expected_active_ports']}")
    module.exit_json(changed=False, ansible_facts={"infiniband": gather(module, module.params)})


if __name__ == "__main__":
    main()
