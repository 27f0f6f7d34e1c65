# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hardware profile a host gets from its profile group (module_utils hardware_profiles)."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import hardware_profiles


def hardware_profile(group_names, site=None, overrides=None):
    """The host's gpuops_hardware: its profile group's profile (built-in or the site's), overrides merged in."""
    return hardware_profiles.resolve(list(group_names or []), site, overrides)


class FilterModule:
    def filters(self):
        return {"hardware_profile": hardware_profile}
