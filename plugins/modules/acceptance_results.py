#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: acceptance_results
short_description: Judge nodes from their acceptance evidence and write the run's results, on the controller
version_added: 0.2.0
description:
  - Runs on the controller (an action plugin); connects to no host. Three steps, in this order in a play, and a
    fourth that needs only a results directory.
  - C(step=check) (once per run) - where the results go (O(results_dir), else C(reports/) beside the inventory's
    directory, else the current directory's), that the directory is absolute, outside an installed collection and
    writable, that O(run_id) is a run id and every host in O(hosts) can name a file; fails before any node is read,
    naming the variable, the value and the fix. Returns C(run_id) (a new one, the UTC time, when O(run_id) is empty;
    an existing run's id adds to that run), C(results_dir) and C(started_at).
  - C(step=node) (per node) - judges the node's evidence (O(evidence), C(gpuops.bringup.acceptance_read)'s result)
    against its hardware profile (O(hardware)); writes C(nodes/<node>.json), the evidence files and their
    C(SHA256SUMS) under C(<results_dir>/<run_id>/). Returns the node's results document as C(results).
  - C(step=run) (once per run, after every node) - writes C(run.json) - each node of O(hosts) with its verdict (a host
    without results, unreachable or failed before its checks, is C(incomplete) with the reason), totals per verdict
    and per rack, the collection's and Ansible's versions, who ran it; an earlier attempt's nodes of the same run are
    kept. Then the run's reports, made from its results directory alone (C(step=report)).
  - C(step=report) - the reports of a run already written, from its directory (O(results_dir) and O(run_id), or
    O(results_dir) alone naming the run's directory; it may have been copied from another controller or an AWX job)
    - C(report.html) (one self-contained file for people, no script or asset from elsewhere), C(junit.xml) (one
    testsuite per node, one testcase per check), C(summary.md) (for tickets) and C(inventory.csv) (each GPU, RDMA
    adapter and system, for asset management). Fails with the reason when the directory holds no run.
  - Directories are created 0750 and files 0640. In check mode nothing is written. C(changed) is always false - the
    results are a record of the run, not managed state.
  - The documents follow C(schemas/acceptance-node.schema.json) and C(schemas/acceptance-run.schema.json).
author: gpuops.bringup developers (@gpuops)
options:
  step:
    description: Which step - C(check), C(node), C(run) or C(report).
    type: str
    required: true
    choices: [check, node, run, report]
  results_dir:
    description:
      - The directory on the controller that holds one directory per run. For C(check), empty for the default.
      - For C(report) without O(run_id), the directory of the run itself.
    type: str
    default: ""
  run_id:
    description: The run - for C(check), empty for a new run, or an existing run's id to add to it.
    type: str
    default: ""
  evidence:
    description: C(step=node) - the node's C(gpuops.bringup.acceptance_read) result.
    type: dict
  hardware:
    description: C(step=node) - the node's C(gpuops_hardware).
    type: dict
  required:
    description: C(step=node) - the ids of the checks the node must pass; empty for the profile's.
    type: list
    elements: str
    default: []
  optional:
    description: C(step=node) - ids taken out of the required checks.
    type: list
    elements: str
    default: []
  system_serial:
    description:
      - C(step=node) - the system serial the node must report (its C(gpuops_system_serial), from the rack manifest),
        compared with dmidecode's by the check C(inventory.system_serial); empty leaves that check not applicable.
    type: str
    default: ""
  hosts:
    description: C(check) - every host whose results will be written; C(run) - every host of the run.
    type: list
    elements: str
    default: []
  started_at:
    description: C(step=run) - when the run started (C(step=check)'s C(started_at)).
    type: str
    default: ""
  site:
    description: C(step=run) - the site's name the run's document and reports show; empty for none.
    type: str
    default: ""
  result_var:
    description: C(step=run) - the variable each host registered its C(step=node) result in.
    type: str
    default: __acceptance_node
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpuops.bringup.attributes.controller_check
"""

EXAMPLES = r"""
- name: Check where the results go
  gpuops.bringup.acceptance_results:
    step: check
    hosts: "{{ ansible_play_hosts_all }}"
  run_once: true
  register: run

- name: Collect each node's evidence
  gpuops.bringup.acceptance_read:
  register: read

- name: Judge each node and write its results
  gpuops.bringup.acceptance_results:
    step: node
    results_dir: "{{ run.results_dir }}"
    run_id: "{{ run.run_id }}"
    evidence: "{{ read }}"
    hardware: "{{ gpuops_hardware }}"
  register: __acceptance_node

- name: Write the run's document
  gpuops.bringup.acceptance_results:
    step: run
    results_dir: "{{ run.results_dir }}"
    run_id: "{{ run.run_id }}"
    started_at: "{{ run.started_at }}"
    hosts: "{{ ansible_play_hosts_all }}"
  run_once: true

- name: Make the reports of a run copied from elsewhere
  gpuops.bringup.acceptance_results:
    step: report
    results_dir: /srv/gpuops/reports/20261206T100000Z
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
run_id:
  description: C(step=check) - the run's id.
  returned: step check
  type: str
results_dir:
  description: C(step=check) - the results directory, resolved.
  returned: step check
  type: str
started_at:
  description: C(step=check) - when the run started (UTC, ISO 8601).
  returned: step check
  type: str
results:
  description: C(step=node) - the node's results document (C(verdict), C(checks), C(inventory), C(evidence)...).
  returned: step node
  type: dict
run:
  description: C(step=run) - the run's document as written.
  returned: step run, not in check mode
  type: dict
reports:
  description: C(step=run) and C(step=report) - the path of each report written, by kind (C(html), C(junit),
    C(markdown), C(csv)).
  returned: steps run and report, not in check mode
  type: dict
"""
