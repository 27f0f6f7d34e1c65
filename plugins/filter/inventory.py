# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host pattern of the stage playbooks (module_utils inventory_schema).

The stage playbooks resolve it in their plays' hosts, which the controller's main process templates before the play's
tasks fork their workers. To find one filter of a collection, ansible-core imports every filter file of it, with the
module_utils they import; done there once, it is inherited by every worker, which would otherwise each do it anew for
its first gpuops.bringup filter (about 0.13 s of CPU per task on a slow core).
"""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import inventory_schema
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping


def node_hosts(groups):
    """Every host but the cluster's control plane, as a host pattern ("all" where the inventory has no such group)."""
    return inventory_schema.node_hosts(mapping(groups, "groups", "node_hosts"))


class FilterModule:
    def filters(self):
        return {"node_hosts": node_hosts}
