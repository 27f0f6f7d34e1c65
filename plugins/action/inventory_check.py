# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs on the controller: checks every inventory host against the rack inventory contract."""

from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible_collections.gpuops.bringup.plugins.module_utils.inventory_schema import check_inventory

_VARS = ("group_names", "gpuops_hardware", "ansible_host", "ansible_port")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("hosts",))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _, args = self.validate_argument_spec(
            argument_spec={"hosts": {"type": "list", "elements": "str"}},
        )
        names = args["hosts"] if args["hosts"] is not None else task_vars["groups"]["all"]
        hostvars = task_vars["hostvars"]
        data = {}
        for name in names:
            if name not in hostvars:
                result.update(failed=True, msg=f"host {name} is not in the inventory")
                return result
            host = hostvars[name]
            data[name] = {key: host.get(key) for key in _VARS}
        problems, summary = check_inventory(data)
        result.update(changed=False, summary=summary, problems=problems)
        if problems:
            result["failed"] = True
            result["msg"] = f"the inventory breaks the rack inventory contract in {len(problems)} place(s):\n- " + "\n- ".join(problems)
        else:
            result["msg"] = (f"{summary['hosts']} hosts in {len(summary['racks'])} rack(s), "
                             f"{len(summary['profiles'])} hardware profile(s): inventory is well-formed")
        return result
