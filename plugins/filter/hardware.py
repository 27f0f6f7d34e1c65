# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's hardware report, from the facts modules' results and its hardware profile."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils.hardware_report import hardware_report


def _hardware_report(hardware, node, gpu=None, infiniband=None, kernel_log=None, fail_on="error"):
    if not isinstance(hardware, dict):
        raise AnsibleFilterError(
            f"gpuops.bringup.hardware_report needs the node's gpuops_hardware mapping, got {hardware!r}"
        )
    try:
        return hardware_report(node, hardware, gpu or None, infiniband or None, kernel_log or None, fail_on)
    except ValueError as exc:
        raise AnsibleFilterError(f"gpuops.bringup.hardware_report: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"hardware_report": _hardware_report}
