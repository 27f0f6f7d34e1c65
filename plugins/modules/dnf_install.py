#!/usr/bin/python
# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dnf_install
short_description: Install packages with dnf on RHEL 8 and 9 alike, resolved by dnf first
version_added: 0.1.0
description:
  - Resolves the install with dnf's own resolver (the node's repositories, plugins such as versionlock, its rpm
    database), then runs C(dnf install -y) when anything is to be installed. Check mode and O(simulate) resolve
    only, and return what the install would do.
  - M(ansible.builtin.dnf) imports dnf's Python bindings into the Python it runs on. On RHEL 8 those exist only for
    C(/usr/libexec/platform-python) 3.6, which ansible-core 2.17 and later no longer run modules on
    (ansible/ansible#82068); this module runs dnf's resolver in a separate process of the Python that has them,
    and dnf itself for the install, so it works on RHEL 8 and 9 with any Python ansible-core supports.
  - Fails, before installing anything, when dnf cannot resolve the install (a version no repository carries, a
    conflict, a version excluded by versionlock), or when the install would remove packages.
author: gpuops.bringup developers (@gpuops)
options:
  name:
    description: Package specs as C(dnf install) takes them - C(name), C(name-version-release),
      C(name-epoch:version-release).
    type: list
    elements: str
    required: true
  install_weak_deps:
    description: Whether weak dependencies (Recommends) come along.
    type: bool
    default: false
  simulate:
    description: Resolve only, as in check mode, and report the transaction without failing on it.
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpuops.bringup.attributes.changes
notes:
  - Runs dnf with C(LANG=C). Repository metadata is refreshed as dnf's own expiry settings say.
"""

EXAMPLES = r"""
- name: Install CUDA 12.2 Update 2 exactly
  gpuops.bringup.dnf_install:
    name: [cuda-toolkit-12-2-12.2.2-1]

- name: What installing it would bring
  gpuops.bringup.dnf_install:
    name: [cuda-toolkit-12-2-12.2.2-1]
    simulate: true
  register: plan
"""

RETURN = r"""
transaction:
  description: >-
    What dnf resolved - C(install) (C(name), C(version), C(arch), C(sourcerpm), C(provides), C(requires),
    C(upgrade_from): the version it replaces or null) and C(remove) (C(name), C(version)); C(error), dnf's message
    when it cannot resolve (only with O(simulate)); C(versionlock), whether dnf's versionlock plugin is installed.
  returned: always
  type: dict
  sample: {"error": null, "install": [{"name": "cuda-toolkit-12-2", "version": "12.2.2-1", "arch": "x86_64",
           "sourcerpm": "cuda-toolkit-12-2-12.2.2-1.src.rpm", "provides": ["cuda-toolkit-12-2 = 12.2.2-1"],
           "requires": [], "upgrade_from": null}], "remove": [], "versionlock": true}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.bringup.plugins.module_utils import dnf
from ansible_collections.gpuops.bringup.plugins.module_utils.command import ToolRunner


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "list", "elements": "str", "required": True},
            "install_weak_deps": {"type": "bool", "default": False},
            "simulate": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    specs = module.params["name"]
    weak = module.params["install_weak_deps"]
    transaction = dnf.resolve(module, specs, install_weak_deps=weak) if specs else dnf.nothing()
    if module.params["simulate"]:
        module.exit_json(changed=False, transaction=transaction)
    if transaction["error"]:
        module.fail_json(msg=f"dnf cannot install {', '.join(specs)}: {transaction['error']}", transaction=transaction)
    if transaction["remove"]:
        removed = ", ".join(f"{p['name']} {p['version']}" for p in transaction["remove"])
        module.fail_json(
            msg=f"installing {', '.join(specs)} would remove {removed}; nothing was installed",
            transaction=transaction,
        )
    incoming = transaction["install"]
    diff = {
        "before": "".join(f"{p['name']}: {p['upgrade_from'] or 'not installed'}\n" for p in incoming),
        "after": "".join(f"{p['name']}: {p['version']}\n" for p in incoming),
    }
    if incoming and not module.check_mode:
        ToolRunner(module, "dnf")(["install", "--assumeyes", f"--setopt=install_weak_deps={weak}", "--", *specs])
    module.exit_json(changed=bool(incoming), transaction=transaction, diff=diff)


if __name__ == "__main__":
    main()
