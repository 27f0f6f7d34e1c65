# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs on the controller: the kubeconfig the roles reach the Kubernetes API with - there, and kept private."""

from __future__ import annotations

import os

from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.bringup.plugins.module_utils.kubernetes_node import kubeconfig_findings


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("variable", "path", "fail_on_problem"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(
            argument_spec={
                "variable": {"type": "str", "required": True},
                "path": {"type": "str", "default": ""},
                "fail_on_problem": {"type": "bool", "default": True},
            },
        )
        path = args["path"]
        # "" is the Kubernetes client's default, which kubernetes.core reads the same way.
        resolved = path or os.environ.get("K8S_AUTH_KUBECONFIG") or os.path.expanduser("~/.kube/config")
        try:
            stat = os.stat(resolved) if os.path.isfile(resolved) else None
        except OSError:
            stat = None
        error, warnings = kubeconfig_findings(args["variable"], path, stat, os.getuid())
        result.update(changed=False, path=resolved if stat else None, problem=error)
        if warnings:
            result["warnings"] = warnings
        if error:
            # fail_on_problem false: the caller reports it with its other problems (k8s_node's preflight).
            result.update(failed=args["fail_on_problem"], msg=error)
        else:
            result["msg"] = f"{args['variable']}: {resolved if stat else 'no file yet (the client default)'}"
        return result
