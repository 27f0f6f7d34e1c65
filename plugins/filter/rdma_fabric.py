# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdma_fabric filters: the DOCA-OFED version a release's repository gives this node, and whether installing it needs
a reboot."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import rdma_fabric
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import plain


def _doca_plan(index, installed, profile, release, url, host):
    # Plain types: Ansible hands templates tagged str subclasses.
    return rdma_fabric.doca_plan(
        {str(k): [str(v) for v in vs] for k, vs in index.items()},
        str(installed) if installed else None,
        str(profile),
        str(release),
        str(url),
        str(host),
    )


def _doca_reboot(ib_core, installed, planned, host):
    return rdma_fabric.doca_reboot_reason(
        dict(ib_core),
        str(installed) if installed else None,
        str(planned) if planned else None,
        str(host),
    )


def _input_problems(variables, doca_releases, ports):
    return rdma_fabric.input_problems(plain(dict(variables)), [str(r) for r in doca_releases], int(ports or 0))


class FilterModule:
    def filters(self):
        return {
            "rdma_fabric_doca_plan": _doca_plan,
            "rdma_fabric_doca_reboot": _doca_reboot,
            "rdma_fabric_input_problems": _input_problems,
        }
