#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: package_info
short_description: Installed, candidate and available versions of named packages, and what is installed (apt)
version_added: 0.1.0
description:
  - For each named package, the version installed and its dpkg state (held, left half-installed), the candidate apt
    would install, and every version the configured sources carry, from C(dpkg-query) and C(apt-cache policy) in one
    round trip. Roles resolve and pin exact versions from it before installing anything.
  - Optionally lists every installed package, so a role can tell afterwards which packages a run added.
  - Reads the package index as it is; refreshing it is the caller's business.
  - apt (Debian, Ubuntu) only.
author: gpuops.bringup developers (@gpuops)
options:
  name:
    description: Package names. Names the sources and dpkg do not know are reported with no versions.
    type: list
    elements: str
    default: []
  list_installed:
    description: Also return C(installed_names), every package dpkg has installed or left half-installed.
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
notes:
  - Commands run with C(LANG=C). A host without apt-cache and dpkg-query fails the task.
"""

EXAMPLES = r"""
- name: Versions of the driver packages
  gpuops.bringup.package_info:
    name: [nvidia-tesla-535-kernel-dkms, nvidia-persistenced]
  register: driver_packages

- name: The newest version the sources carry
  ansible.builtin.debug:
    msg: "{{ driver_packages.packages['nvidia-tesla-535-kernel-dkms'].candidate }}"
"""

RETURN = r"""
packages:
  description: Per requested name.
  returned: always
  type: dict
  contains:
    installed:
      description: The installed version (also when dpkg left it half-installed or half-configured), or null.
      type: str
      sample: 535.274.02-1~deb13u1
    held:
      description: The package is on hold (apt-mark hold).
      type: bool
    broken:
      description: dpkg left the package half-installed, unpacked or half-configured.
      type: bool
    candidate:
      description: The version apt would install, or null.
      type: str
    available:
      description: Every version a configured source carries, newest first (the installed one only if a source has it).
      type: list
      elements: str
  sample:
    nvidia-tesla-535-kernel-dkms:
      installed: null
      held: false
      broken: false
      candidate: 535.274.02-1~deb13u1
      available: [535.274.02-1~deb13u1]
installed_names:
  description: Every package dpkg has installed or left half-installed (with O(list_installed)), sorted.
  returned: when O(list_installed) is true
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, osinfo
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner

DPKG_FORMAT = "${Package}\t${Version}\t${db:Status-Abbrev}\t${db:Status-Want}\n"


def gather(query, policy, names, list_installed):
    """The module's result from two runners: query (dpkg-query) and policy (apt-cache)."""
    names = sorted(set(names))
    result = {"changed": False, "packages": {}}
    if names:
        # dpkg-query exits 1 when a name is unknown to dpkg; those names are absent from its output.
        _rc, out, _err = query(["-W", "-f", DPKG_FORMAT, "--", *names], ok_rc=(0, 1))
        dpkg = osinfo.parse_dpkg_query(out)
        _rc, out, _err = policy(["policy", "--", *names])
        table = apt.parse_apt_policy(out)
        for name in names:
            state = dpkg.get(name, {})
            entry = table.get(name, {"installed": None, "candidate": None, "versions": []})
            present = state.get("installed") or state.get("broken")
            result["packages"][name] = {
                "installed": state.get("version") if present else None,
                "held": bool(state.get("held")) and bool(present),
                "broken": bool(state.get("broken")),
                "candidate": entry["candidate"],
                "available": [v["version"] for v in entry["versions"] if v["downloadable"]],
            }
    if list_installed:
        _rc, out, _err = query(["-W", "-f", DPKG_FORMAT])
        dpkg = osinfo.parse_dpkg_query(out)
        result["installed_names"] = sorted(n for n, p in dpkg.items() if p["installed"] or p["broken"])
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "list", "elements": "str", "default": []},
            "list_installed": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    result = gather(
        ToolRunner(module, "dpkg-query"),
        ToolRunner(module, "apt-cache"),
        module.params["name"],
        module.params["list_installed"],
    )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
