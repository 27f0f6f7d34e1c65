# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package-source filters: the offline-mirror URL rule and source checks for preflight."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.module_utils.repositories import (
    key_problem,
    list_problems,
    mirror_url_problem,
    mirrored,
)
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping, plain


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


def _repository_key_problem(index, host, pins, fingerprint, sha256, fix):
    # "" when the key is the pinned one: an assert compares strings.
    index = plain(mapping(index, "repository_index's result", "repository_key_problem"))
    return key_problem(host=str(host), index=index, pins=str(pins), fingerprint=str(fingerprint),
                       sha256=str(sha256 or ""), fix=str(fix)) or ""  # fmt: skip


class FilterModule:
    def filters(self):
        return {
            "mirrored": _mirrored,
            "mirror_url_problem": _mirror_url_problem,
            "repository_key_problem": _repository_key_problem,
            "repository_problems": list_problems,
        }
