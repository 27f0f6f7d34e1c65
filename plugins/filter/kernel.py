# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel-state filters for roles."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils import os_baseline
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import fields, mapping, plain

# The role's settings as os_baseline's vars/main.yml gathers them (__os_baseline_settings).
SETTINGS = (
    "files", "blacklist_nouveau", "kernel_cmdline", "modules", "sysctl", "memlock_unlimited", "chrony", "disable_swap",
    "kernel_hold", "chrony_service",
)  # fmt: skip


def sysctl_drift(desired, live):
    """Keys whose live value (from os_facts) differs from the desired one; missing keys count as differing."""
    if not isinstance(desired, dict) or not isinstance(live, dict):
        raise AnsibleFilterError(
            "gpuops.bringup.sysctl_drift expects two mappings: desired sysctls and os_facts' sysctl"
        )
    return os_baseline.sysctl_drift(desired, live)


def os_baseline_preflight(node, host, variables):
    """The OS baseline's preflight of one node: {problems, reboot_reasons} (module_utils os_baseline)."""
    return os_baseline.preflight(
        host=str(host),
        node=plain(mapping(node, "os_facts' gpuops_os", "os_baseline_preflight")),
        variables=plain(mapping(variables, "the role's variables", "os_baseline_preflight")),
    )


def _node(node, name):
    return plain(mapping(node, "os_facts' gpuops_os", name))


def os_baseline_paths(node, settings):
    """managed_paths entries of the OS baseline's configuration files (module_utils os_baseline)."""
    return os_baseline.configuration_paths(
        node=_node(node, "os_baseline_paths"),
        settings=fields(settings, "the role's settings", "os_baseline_paths", SETTINGS),
    )


def os_baseline_steps(node, settings, changed_paths):
    """What the node needs after its configuration files were written (module_utils os_baseline)."""
    return os_baseline.configuration_steps(
        node=_node(node, "os_baseline_steps"),
        settings=fields(settings, "the role's settings", "os_baseline_steps", SETTINGS),
        changed_paths=plain(mapping(changed_paths, "managed_paths' changed_paths", "os_baseline_steps")),
    )


def os_baseline_verify_problems(node, settings):
    """{failures, not_applicable} of the node read again after the run (module_utils os_baseline)."""
    return os_baseline.verify_problems(
        node=_node(node, "os_baseline_verify_problems"),
        settings=fields(settings, "the role's settings", "os_baseline_verify_problems", SETTINGS),
    )


class FilterModule:
    def filters(self):
        return {
            "sysctl_drift": sysctl_drift,
            "os_baseline_preflight": os_baseline_preflight,
            "os_baseline_paths": os_baseline_paths,
            "os_baseline_steps": os_baseline_steps,
            "os_baseline_verify_problems": os_baseline_verify_problems,
        }
