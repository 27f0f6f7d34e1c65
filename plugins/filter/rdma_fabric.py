# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdma_fabric filters: the DOCA-OFED version a release's repository gives this node."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import rdma_fabric


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


class FilterModule:
    def filters(self):
        return {"rdma_fabric_doca_plan": _doca_plan}
