# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container toolkit role's preflight (module_utils container_toolkit_preflight) as a filter."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils import container_toolkit_preflight
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping, plain

NAME = "nvidia_container_toolkit_preflight"


def _fields(value, what, keys):
    """The mapping's keys, each given: a missing one would otherwise be read as an empty table or read."""
    found = plain(mapping(value, what, NAME))
    missing = [key for key in keys if key not in found]
    if missing:
        raise AnsibleFilterError(f"gpuops.bringup.{NAME} needs {what} with {', '.join(missing)}")
    return {key: found[key] for key in keys}


def nvidia_container_toolkit_preflight(node, host, variables, tables, reads):
    """The container toolkit's preflight of one node: {problems, gpu, gpus_answer}."""
    tables = _fields(tables, "the role's tables", ("supported", "architectures", "units", "tomli"))
    reads = _fields(reads, "the node's reads", ("runtimes", "gpu"))
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
