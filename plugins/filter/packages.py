# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package filters: what an apt install task still has to do, from what package_info read."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils import apt
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


class FilterModule:
    def filters(self):
        return {"apt_pending": apt_pending}
