# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdma_fabric filters: the role's preflight of a node, and the ports against the profile."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import rdma_fabric
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping, plain


def _preflight(node, host, variables, hardware, reads, peer, tables):
    # Plain types: Ansible hands templates tagged str, dict and list subclasses.
    def arg(value, what):
        return plain(mapping(value, what, "rdma_fabric_preflight"))

    return rdma_fabric.preflight(
        host=str(host),
        variables=arg(variables, "the role's variables"),
        hardware=arg(hardware, "gpuops_hardware"),
        node=arg(node, "os_facts' gpuops_os"),
        reads=arg(reads, "what preflight read"),
        peer=arg(peer, "the bandwidth peer"),
        tables=arg(tables, "the role's tables"),
    )


def _ports(hardware, node, facts):
    return rdma_fabric.port_report(str(node), plain(hardware), plain(facts))


class FilterModule:
    def filters(self):
        return {
            "rdma_fabric_preflight": _preflight,
            "rdma_fabric_ports": _ports,
        }
