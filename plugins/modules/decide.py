#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: decide
short_description: Hold a stage's decision as the task's result, and fail with every problem it names
version_added: 0.1.0
description:
  - Runs on the controller (an action plugin); connects to no host.
  - The roles' decisions are module_utils functions, called through their filters in O(decision). This task makes
    the decision the task's result (register it, then read its keys as C(<registered>.<key>)), with C(changed=false).
  - Fails when the decision's C(problems) list is not empty, with every problem at once (joined by C( | )), so one
    round of fixes clears the node.
  - A decision's C(warnings) list (what the operator should know that stops nothing) becomes the task's warnings,
    which Ansible shows with the task.
author: gpuops.bringup developers (@gpuops)
options:
  decision:
    description:
      - A mapping with a C(problems) list of strings, as every decision of the collection returns, and optionally a
        C(warnings) list of strings.
      - Keys Ansible reads from a task's result (C(failed), C(changed), C(msg), C(results), C(skipped) and the like)
        are refused, as they would change what Ansible makes of the task.
    type: dict
    required: true
  reboot:
    description:
      - The reboot contract's gate, applied where the decision has no other problem, to its C(reboot_reasons) (a list
        of strings; empty where no reboot is needed).
      - Where a reboot is needed and not allowed, the task fails before any change, saying why and which variable
        allows it; in check mode the preview goes on with that text as a warning. An allowed reboot is announced as a
        warning.
    type: dict
    suboptions:
      role:
        description: The role's variable prefix, whose C(<role>_reboot_ok) allows the reboot.
        type: str
        required: true
      allowed:
        description: The value of C(<role>_reboot_ok); the strings C(true), C(false), C(yes), C(no) count as booleans.
        type: bool
        required: true
      change:
        description: What the role does before it reboots, as a verb phrase (C(install the driver)).
        type: str
        required: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpuops.bringup.attributes.controller_check
"""

EXAMPLES = r"""
- name: Work out the node's problems and the plan, and stop on any problem
  gpuops.bringup.decide:
    decision: "{{ ansible_facts.gpuops_os | gpuops.bringup.os_baseline_preflight(inventory_hostname, __settings) }}"
    reboot:
      role: os_baseline
      allowed: "{{ os_baseline_reboot_ok | bool }}"
      change: apply the change
  register: __os_baseline_preflight
"""

RETURN = r"""
problems:
  description: The decision's problems; empty, since the task fails otherwise.
  returned: success
  type: list
  elements: str
"""
