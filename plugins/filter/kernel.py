# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel-state filters for roles."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils import os_baseline
from ansible_collections.gpuops.bringup.plugins.module_utils.osinfo import normalize_sysctl
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping, plain


def sysctl_drift(desired, live):
    """Keys whose live value (from os_facts) differs from the desired one; missing keys count as differing."""
    if not isinstance(desired, dict) or not isinstance(live, dict):
        raise AnsibleFilterError(
            "gpuops.bringup.sysctl_drift expects two mappings: desired sysctls and os_facts' sysctl"
        )
    return sorted(
        key for key, value in desired.items() if live.get(key) is None or normalize_sysctl(value) != live[key]
    )


def os_baseline_preflight(node, host, variables):
    """The OS baseline's preflight of one node: {problems, reboot_reasons} (module_utils os_baseline)."""
    return os_baseline.preflight(
        host=str(host),
        node=plain(mapping(node, "os_facts' gpuops_os", "os_baseline_preflight")),
        variables=plain(mapping(variables, "the role's variables", "os_baseline_preflight")),
    )


class FilterModule:
    def filters(self):
        return {"sysctl_drift": sysctl_drift, "os_baseline_preflight": os_baseline_preflight}
