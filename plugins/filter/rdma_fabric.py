# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdma_fabric filters: the DOCA-OFED version a release's repository gives this node, whether installing it needs a
reboot, the role's input problems, and the ports against the profile."""

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


def _ports(hardware, node, facts):
    return rdma_fabric.port_report(str(node), plain(hardware), plain(facts))


class FilterModule:
    def filters(self):
        return {
            "rdma_fabric_doca_plan": _doca_plan,
            "rdma_fabric_doca_reboot": _doca_reboot,
            "rdma_fabric_input_problems": _input_problems,
            "rdma_fabric_ports": _ports,
        }
