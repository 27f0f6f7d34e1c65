# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdma_fabric filters: the role's preflight of a node, the ports against the profile, its files and the steps after
them, and its verification."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import rdma_fabric
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import fields, mapping, names, plain


def _arg(name):
    """An argument checker of the filter gpuops.bringup.<name>: a mapping, with Ansible's tagged str, dict and list
    subclasses (what templates hand filters) as plain ones."""

    def check(value, what):
        return plain(mapping(value, what, name))

    return check


def _preflight(node, host, variables, hardware, reads, peer, tables):
    arg = _arg("rdma_fabric_preflight")
    return rdma_fabric.preflight(
        host=str(host),
        variables=arg(variables, "the role's variables"),
        hardware=arg(hardware, "gpuops_hardware"),
        node=arg(node, "os_facts' gpuops_os"),
        reads=arg(reads, "what preflight read"),
        peer=arg(peer, "the bandwidth peer"),
        tables=arg(tables, "the role's tables"),
    )


def _packages(packages, host, stack_packages, os_packages):
    name = "rdma_fabric_packages"
    return rdma_fabric.package_steps(
        host=str(host),
        stack_packages=names(stack_packages, "the stack's packages", name),
        os_packages=names(os_packages, "the OS tools", name),
        packages=plain(mapping(packages, "package_info's packages", name)),
    )


def _ports(hardware, node, facts):
    return rdma_fabric.port_report(str(node), plain(hardware), plain(facts))


# The role's settings as rdma_fabric's vars/main.yml gathers them (__rdma_fabric_settings).
SETTINGS = (
    "tool", "interfaces", "ipoib_mtu", "roce_mtu", "peermem", "roce_qos", "roce_dscp", "roce_priority", "roce_ecn",
    "dcb", "modules_load", "networkd_dir", "networkd_prefix", "netplan_file", "nm_dir", "nm_prefix", "qos_prefix",
    "state_file", "owned",
)  # fmt: skip


def _paths(settings, host, peermem_module, state, owned):
    name = "rdma_fabric_paths"
    return rdma_fabric.configuration_paths(
        host=str(host),
        settings=fields(settings, "the role's settings", name, SETTINGS),
        peermem_module=plain(peermem_module),
        state=plain(mapping(state, "the state decided in preflight", name)),
        owned=[str(path) for path in owned or []],
    )


def _steps(settings, changed_paths, own_kernel, netdevs):
    name = "rdma_fabric_steps"
    return rdma_fabric.configuration_steps(
        settings=fields(settings, "the role's settings", name, SETTINGS),
        changed_paths=plain(mapping(changed_paths, "managed_paths' changed_paths", name)),
        own_kernel=bool(own_kernel),
        netdevs=[str(netdev) for netdev in netdevs or []],
    )


def _verify(node, host, settings, reads):
    arg = _arg("rdma_fabric_verify_problems")
    return rdma_fabric.verify_problems(
        host=str(host), settings=arg(settings, "the role's settings"), node=arg(node, "os_facts' gpuops_os"),
        reads=arg(reads, "what verify read"),
    )  # fmt: skip


class FilterModule:
    def filters(self):
        return {
            "rdma_fabric_preflight": _preflight,
            "rdma_fabric_packages": _packages,
            "rdma_fabric_paths": _paths,
            "rdma_fabric_ports": _ports,
            "rdma_fabric_steps": _steps,
            "rdma_fabric_verify_problems": _verify,
        }
