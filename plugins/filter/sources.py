# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package-source filters: the offline-mirror URL rule and source checks for preflight."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils.repositories import (
    list_problems,
    mirror_url_problem,
    mirrored,
)


def _mirrored(url, mirror):
    try:
        return mirrored(url, mirror)
    except ValueError as exc:
        raise AnsibleFilterError(f"gpuops.bringup.mirrored: {exc}") from exc


def _mirror_url_problem(mirror):
    # An empty mirror is the documented way to use upstream sources.
    if mirror == "":
        return ""
    return mirror_url_problem(mirror) or ""


class FilterModule:
    def filters(self):
        return {
            "mirrored": _mirrored,
            "mirror_url_problem": _mirror_url_problem,
            "repository_problems": list_problems,
        }
