# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package filters: what an apt install task and a package_hold task still have to do, from what package_info or
os_facts read."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils import apt, osinfo
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping


def apt_pending(specs, packages):
    """The apt module's names ("name" or "name=version") not yet installed at that version, in their order."""
    # A string would be read a character at a time.
    if not isinstance(specs, list):
        raise AnsibleFilterError(
            f"gpuops.bringup.apt_pending needs the apt module's names (a list), got {type(specs).__name__}"
        )
    # Plain strings: Ansible hands templates tagged str subclasses.
    return apt.pending([str(spec) for spec in specs], mapping(packages, "package_info's packages", "apt_pending"))


def package_unheld(names, packages):
    """The names of a package_hold task not yet held, in their order."""
    if not isinstance(names, list):
        raise AnsibleFilterError(
            f"gpuops.bringup.package_unheld needs package names (a list), got {type(names).__name__}"
        )
    if not isinstance(packages, (dict, list)):
        raise AnsibleFilterError(
            "gpuops.bringup.package_unheld needs package_info's packages (a mapping) or os_facts' packages.held "
            f"(a list), got {type(packages).__name__}"
        )
    # Plain strings: Ansible hands templates tagged str subclasses.
    return osinfo.unheld([str(name) for name in names], packages)


class FilterModule:
    def filters(self):
        return {"apt_pending": apt_pending, "package_unheld": package_unheld}
