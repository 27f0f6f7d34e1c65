#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: package_hold
short_description: Hold installed packages at their version (apt-mark hold, dnf versionlock) in one round trip
version_added: 0.1.0
description:
  - Holds or releases a list of installed packages so that an unattended upgrade cannot replace them
    (a kernel DKMS has not built for, a pinned NVIDIA driver).
  - On apt systems uses C(apt-mark); on dnf systems the versionlock plugin, which must be installed.
author: gpuops.bringup developers (@gpuops)
options:
  name:
    description: Package names. Every one must be installed.
    type: list
    elements: str
    required: true
  state:
    description: C(held) holds the packages; C(released) removes their hold.
    type: str
    choices: [held, released]
    default: held
  manager:
    description:
      - The node's package manager, as the role read it (C(gpuops_os.os.package_manager) of
        M(gpuops.bringup.os_facts)) - apt holds with C(apt-mark), dnf with its versionlock plugin. Without it, apt
        where C(apt-mark) is on the PATH, else dnf.
    type: str
    choices: [apt, dnf]
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes.changes
"""

EXAMPLES = r"""
- name: Hold the running kernel's packages
  gpuops.bringup.package_hold:
    name: "{{ ansible_facts.gpuops_os.kernel.packages.running + ansible_facts.gpuops_os.kernel.packages.meta }}"

- name: Release the driver before an upgrade
  gpuops.bringup.package_hold:
    name: [nvidia-driver]
    state: released
"""

RETURN = r"""
held:
  description: Which of the named packages are held after the run.
  returned: always
  type: list
  elements: str
  sample: [linux-image-amd64]
changed_names:
  description: The packages whose hold this run added or removed (or would, in check mode).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import osinfo, rpm
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner


class Apt:
    def __init__(self, module):
        self.query = ToolRunner(module, "dpkg-query")
        self.mark = ToolRunner(module, "apt-mark")

    def state(self, names):
        # dpkg-query exits 1 when a name is unknown; those names are simply absent from the output.
        _rc, out, _err = self.query(
            ["-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\t${db:Status-Want}\n", "--", *names], ok_rc=(0, 1)
        )
        parsed = osinfo.parse_dpkg_query(out)
        installed = {n for n, p in parsed.items() if p["installed"]}
        held = {n for n, p in parsed.items() if p["held"]}
        return installed, held

    def apply(self, state, names):
        self.mark(["hold" if state == "held" else "unhold", "--", *names])


class Dnf:
    def __init__(self, module):
        self.module = module
        self.rpm = ToolRunner(module, "rpm")
        self.dnf = ToolRunner(module, "dnf")

    def state(self, names):
        _rc, out, _err = self.rpm(["-q", "--qf", "%{NAME}\n", "--", *names], ok_rc=tuple(range(256)))
        installed = {line.strip() for line in out.splitlines() if line.strip() in names}
        return installed, rpm.locked_names()

    def apply(self, state, names):
        rc, _out, _err = self.dnf(["versionlock", "--help"], ok_rc=tuple(range(256)))
        if rc != 0:
            self.module.fail_json(
                msg="dnf has no versionlock command: install python3-dnf-plugin-versionlock (RHEL 8/9) "
                "to let this collection hold packages",
            )
        self.dnf(["versionlock", "add" if state == "held" else "delete", "--", *names])


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "list", "elements": "str", "required": True},
            "state": {"type": "str", "choices": ["held", "released"], "default": "held"},
            "manager": {"type": "str", "choices": ["apt", "dnf"]},
        },
        supports_check_mode=True,
    )
    names = sorted(set(module.params["name"]))
    state = module.params["state"]
    if not names:
        module.exit_json(changed=False, held=[], changed_names=[])
    manager = module.params["manager"] or ("apt" if module.get_bin_path("apt-mark") else "dnf")
    backend = Apt(module) if manager == "apt" else Dnf(module)
    installed, held = backend.state(names)
    missing = [n for n in names if n not in installed]
    if missing:
        module.fail_json(
            msg=f"cannot change the hold of packages that are not installed: {', '.join(missing)}", missing=missing
        )

    todo = [n for n in names if (n in held) != (state == "held")]
    after = (held | set(todo)) if state == "held" else (held - set(todo))
    diff = {
        "before": "".join(f"{n}: {'held' if n in held else 'not held'}\n" for n in names),
        "after": "".join(f"{n}: {'held' if n in after else 'not held'}\n" for n in names),
    }
    if todo and not module.check_mode:
        backend.apply(state, todo)
    module.exit_json(changed=bool(todo), held=sorted(n for n in names if n in after), changed_names=todo, diff=diff)


if __name__ == "__main__":
    main()
