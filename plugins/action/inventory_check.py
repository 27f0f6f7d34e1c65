# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs on the controller: checks every inventory host against the rack inventory contract."""

from __future__ import annotations

from ansible.inventory.group import Group
from ansible.plugins.action import ActionBase
from ansible.vars.plugins import get_vars_from_inventory_sources

from ansible_collections.gpuops.bringup.plugins.module_utils import hardware_profiles
from ansible_collections.gpuops.bringup.plugins.module_utils.inventory_schema import CONTROL_PLANE_GROUP, check_play

_VARS = ("group_names", "gpuops_hardware", "ansible_host", "ansible_port")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("hosts",))
    _requires_connection = False

    def _profile_groups(self, task_vars):
        """Groups that are hardware profiles: the collection's and the site's (gpuops_hardware_profiles), and those
        whose group_vars files define gpuops_hardware.

        Host variables show only the profile that won; a host placed in a second
        profile group is caught by knowing every group that is one.
        """
        site = self._templar.template(task_vars.get("gpuops_hardware_profiles") or {})
        sources = task_vars.get("ansible_inventory_sources") or []
        # Vars plugins run at the stage the configuration sets (inventory or
        # task); the one where they do not run contributes nothing.
        return {
            name
            for name in task_vars["groups"]
            if name not in ("all", "ungrouped")
            and (
                name in hardware_profiles.profiles(site)
                or any(
                    "gpuops_hardware" in get_vars_from_inventory_sources(self._loader, sources, [Group(name)], stage)
                    for stage in ("inventory", "task")
                )
            )
        }

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(
            argument_spec={"hosts": {"type": "list", "elements": "str"}},
        )
        # The control plane a stage-4 node joins is in the inventory but is no rack node.
        control_plane = set(task_vars["groups"].get(CONTROL_PLANE_GROUP, []))
        names = (
            args["hosts"]
            if args["hosts"] is not None
            else [name for name in task_vars["groups"]["all"] if name not in control_plane]
        )
        hostvars = task_vars["hostvars"]
        data = {}
        for name in names:
            if name not in hostvars:
                result.update(failed=True, msg=f"host {name} is not in the inventory")
                return result
            host = hostvars[name]
            data[name] = {key: host.get(key) for key in _VARS}
        # A run limited to some nodes (--limit) is stopped by their problems only; the other hosts' are warnings. A
        # play on none of the checked hosts (the controller's own) and an explicit host list check them all.
        play = (
            [] if args["hosts"] is not None else [h for h in task_vars.get("ansible_play_hosts_all") or [] if h in data]
        )
        problems, elsewhere, summary = check_play(data, self._profile_groups(task_vars), play or None)
        result.update(changed=False, summary=summary, problems=problems, elsewhere=elsewhere)
        if elsewhere:
            result["warnings"] = [
                f"a host this run leaves out breaks the rack inventory contract: {p}" for p in elsewhere
            ]
        if problems:
            result["failed"] = True
            result["msg"] = (
                f"the inventory breaks the rack inventory contract in {len(problems)} place(s):\n- "
                + "\n- ".join(problems)
            )
        else:
            result["msg"] = (
                f"{summary['hosts']} hosts in {len(summary['racks'])} rack(s), "
                f"{len(summary['profiles'])} hardware profile(s): inventory is well-formed"
            )
        return result
