#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: inventory_check
short_description: Check the rack inventory against the collection's schema before any host is touched
version_added: 0.1.0
description:
  - Runs on the controller (an action plugin); connects to no host.
  - Every host must be in exactly one C(rack_*) group and one hardware profile group (a profile the collection ships,
    one of C(gpuops_hardware_profiles), or a group whose group_vars define C(gpuops_hardware)), and its profile must
    be well-formed (profile name, GPU model, architecture, count, NVSwitch, InfiniBand ports, rate, link layer).
  - Fails with one line per problem, each naming the host, the variable, the value and the fix.
  - In a run limited to some nodes (C(--limit)), only problems that concern a node of the play fail it; those of the
    other hosts are warnings (C(elsewhere)). A play on none of the checked hosts (the controller's own) checks them
    all.
author: gpuops.bringup developers (@gpuops)
options:
  hosts:
    description:
      - Hosts to check; when omitted, all inventory hosts but those of the group C(kube_control_plane) (the cluster
        stage 4 joins, not rack nodes).
    type: list
    elements: str
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpuops.bringup.attributes.controller_check
"""

EXAMPLES = r"""
- name: Check the inventory
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Check the inventory
      gpuops.bringup.inventory_check:
"""

RETURN = r"""
summary:
  description: Hosts counted, and the members of each rack and hardware profile.
  returned: always
  type: dict
  sample:
    hosts: 2
    racks:
      rack_local: [node01, node02]
    profiles:
      bench_container: [node01, node02]
problems:
  description: One line per contract violation that concerns a host of the run; empty when there is none.
  returned: always
  type: list
  elements: str
elsewhere:
  description: One line per contract violation that concerns only hosts the run leaves out (C(--limit)), also given
    as warnings.
  returned: always
  type: list
  elements: str
"""
