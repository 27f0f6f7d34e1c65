#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: package_info
short_description: Installed, candidate and available versions of named packages, and what is installed (apt, dnf)
version_added: 0.1.0
description:
  - For each named package, the version installed and its state (held, left half-installed), the candidate the
    package manager would install, and every version the configured sources carry, in one round trip. Roles resolve
    and pin exact versions from it before installing anything.
  - apt (Debian, Ubuntu) - C(dpkg-query) and C(apt-cache policy); reads the package index as it is, refreshing it is
    the caller's business.
  - dnf (RHEL, Rocky Linux) - C(rpm -q), dnf's C(versionlock.list) (held) and C(dnf repoquery --showduplicates) over
    the enabled repositories, the versionlock plugin left out so that held packages' other versions are listed too;
    dnf refreshes expired repository metadata itself. Versions are dnf's EVRs, an epoch of 0 left out
    (C(12.4.1-1), C(3:550.163.01-1.el9)). rpm has no half-installed state, so C(broken) is always false.
  - Optionally lists every installed package, so a role can tell afterwards which packages a run added.
author: gpuops.bringup developers (@gpuops)
options:
  name:
    description: Package names. Names the sources and dpkg do not know are reported with no versions.
    type: list
    elements: str
    default: []
  list_installed:
    description: Also return C(installed_names), every package dpkg has installed or left half-installed (apt), or
      rpm has installed (dnf; not the C(gpg-pubkey) entries of imported keys).
    type: bool
    default: false
  manager:
    description:
      - The node's package manager, as the role read it (C(gpuops_os.os.package_manager) of
        M(gpuops.bringup.os_facts)). Without it, apt where C(apt-cache) is on the PATH, else dnf.
    type: str
    choices: [apt, dnf]
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes
notes:
  - Commands run with C(LANG=C). A host without the manager's tools fails the task.
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
      description: The installed version (also when dpkg left it half-installed or half-configured), or null. Of an
        install-only rpm package installed several times (kernel), the newest.
      type: str
      sample: 535.274.02-1~deb13u1
    held:
      description: The package is on hold (apt-mark hold).
      type: bool
    broken:
      description: dpkg left the package half-installed, unpacked or half-configured.
      type: bool
    candidate:
      description: The version apt would install (dnf - the newest a source carries), or null.
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
  description: Every package installed, or left half-installed by dpkg (with O(list_installed)), sorted.
  returned: when O(list_installed) is true
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, osinfo, rpm
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


def gather_dnf(query, repoquery, held, names, list_installed):
    """The module's result on dnf: query runs rpm, repoquery dnf, held is the names versionlock holds."""
    names = sorted(set(names))
    result = {"changed": False, "packages": {}}
    if names:
        # rpm exits with the number of names it lacks, each reported as "package NAME is not installed".
        _rc, out, _err = query(["-q", "--qf", rpm.RPM_QUERY_FORMAT, "--", *names], ok_rc=tuple(range(256)))
        installed = rpm.parse_installed(out)
        # A lock hides a held package's other versions from dnf; listing them is the point here.
        _rc, out, _err = repoquery(
            ["repoquery", "--quiet", "--disableplugin=versionlock", "--showduplicates",
             f"--qf={rpm.REPOQUERY_FORMAT}", "--", *names]
        )  # fmt: skip
        carried = rpm.parse_repoquery(out, names)
        for name in names:
            available = list(reversed(carried[name]))
            result["packages"][name] = {
                "installed": installed.get(name),
                "held": name in held and name in installed,
                "broken": False,
                "candidate": available[0] if available else None,
                "available": available,
            }
    if list_installed:
        _rc, out, _err = query(["-qa", "--qf", "%{NAME}\n"])
        # rpm lists each imported signing key as a gpg-pubkey entry: a key, not a package anyone installs.
        names = {line.strip() for line in out.splitlines() if line.strip()}
        result["installed_names"] = sorted(names - {"gpg-pubkey"})
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "list", "elements": "str", "default": []},
            "list_installed": {"type": "bool", "default": False},
            "manager": {"type": "str", "choices": ["apt", "dnf"]},
        },
        supports_check_mode=True,
    )
    manager = module.params["manager"] or ("apt" if module.get_bin_path("apt-cache") else "dnf")
    if manager == "apt":
        result = gather(
            ToolRunner(module, "dpkg-query"),
            ToolRunner(module, "apt-cache"),
            module.params["name"],
            module.params["list_installed"],
        )
    else:
        result = gather_dnf(
            ToolRunner(module, "rpm"),
            ToolRunner(module, "dnf"),
            rpm.locked_names(),
            module.params["name"],
            module.params["list_installed"],
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
