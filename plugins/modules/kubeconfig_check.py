#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kubeconfig_check
short_description: Check the kubeconfig the roles reach the Kubernetes API with, on the controller
version_added: 0.1.0
description:
  - Runs on the controller (an action plugin); connects to no host.
  - Fails when O(path) names no file there, with the variable, the value and the fix (in RV(problem) either way; with
    O(fail_on_problem=false) the task does not fail, for a caller that reports it with its other problems).
  - Warns when the file (or, for an empty O(path), the client's default - C($K8S_AUTH_KUBECONFIG), else
    C(~/.kube/config)) is readable or writable by its group or others, or owned by another user than the one running
    Ansible - it holds the cluster's credentials.
  - The rights the roles need are few (nodes get and patch, pods get and list, pods/eviction create) - the README of
    the k8s_node role has the ClusterRole.
author: gpuops.bringup developers (@gpuops)
options:
  variable:
    description: The variable that names the kubeconfig, for the messages (C(k8s_node_kubeconfig)).
    type: str
    required: true
  path:
    description: The kubeconfig's path on the controller; empty for the client's default.
    type: str
    default: ""
  fail_on_problem:
    description: Whether a kubeconfig that cannot be used fails the task; false leaves it to the caller (RV(problem)).
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - gpuops.bringup.attributes.controller_check
"""

EXAMPLES = r"""
- name: Check the kubeconfig the controller reaches the Kubernetes API with
  gpuops.bringup.kubeconfig_check:
    variable: k8s_node_kubeconfig
    path: "{{ k8s_node_kubeconfig }}"
"""

RETURN = r"""
path:
  description: The file the Kubernetes client will read, or null when there is none (an empty path, no default file).
  returned: always
  type: str
problem:
  description: Why the kubeconfig cannot be used (the variable, the value and the fix), or null when it can.
  returned: always
  type: str
"""
