# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel-state filters for roles."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils.osinfo import normalize_sysctl


def sysctl_drift(desired, live):
    """Keys whose live value (from os_facts) differs from the desired one; missing keys count as differing."""
    if not isinstance(desired, dict) or not isinstance(live, dict):
        raise AnsibleFilterError(
            "gpuops.bringup.sysctl_drift expects two mappings: desired sysctls and os_facts' sysctl"
        )
    return sorted(
        key for key, value in desired.items() if live.get(key) is None or normalize_sysctl(value) != live[key]
    )


class FilterModule:
    def filters(self):
        return {"sysctl_drift": sysctl_drift}
