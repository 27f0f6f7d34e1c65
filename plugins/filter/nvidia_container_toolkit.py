# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container toolkit role's preflight (module_utils container_toolkit_preflight) as a filter."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils import container_toolkit_preflight
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import fields, mapping, plain

NAME = "nvidia_container_toolkit_preflight"


def nvidia_container_toolkit_preflight(node, host, variables, tables, reads):
    """The container toolkit's preflight of one node: {problems, gpu, gpus_answer}."""
    tables = fields(tables, "the role's tables", NAME, ("supported", "architectures", "units", "tomli"))
    reads = fields(reads, "the node's reads", NAME, ("runtimes", "gpu"))
    if not isinstance(reads["runtimes"], list):
        raise AnsibleFilterError(f"gpuops.bringup.{NAME} needs the runtime checks' results (a list)")
    return container_toolkit_preflight.preflight(
        host=str(host),
        node=plain(mapping(node, "os_facts' gpuops_os", NAME)),
        variables=plain(mapping(variables, "the role's variables", NAME)),
        runtime_checks=reads["runtimes"],
        gpu_read=mapping(reads["gpu"], "gpu_facts' registered result", NAME),
        **tables,
    )


class FilterModule:
    def filters(self):
        return {NAME: nvidia_container_toolkit_preflight}
