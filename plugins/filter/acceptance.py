# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance stage's input check (a node's profile and the role's check lists, before anything is read), and its
gates by profile name for the nccl_tests stage."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils.acceptance import input_problems, nccl_gates_by_profile
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import plain


def _acceptance_input_problems(hardware, required=None, optional=None):
    return input_problems(plain(hardware), plain(required), plain(optional))


def _acceptance_nccl_gates(profiles):
    return nccl_gates_by_profile(plain(list(profiles or [])))


class FilterModule:
    def filters(self):
        return {
            "acceptance_input_problems": _acceptance_input_problems,
            "acceptance_nccl_gates": _acceptance_nccl_gates,
        }
