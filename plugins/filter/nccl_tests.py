# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl_tests role's decisions (module_utils/nccl_tests_plan) as filters."""

from __future__ import annotations

from ansible_collections.gpuops.bringup.plugins.module_utils import nccl_tests_plan
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping


def _input_problems(params, hardware, published, profiles, groups, play_hosts, node):
    mapping(params, "the role's variables", "nccl_tests_input_problems")
    return nccl_tests_plan.input_problems(
        params, hardware or {}, published or {}, list(profiles or []), groups or {}, list(play_hosts or []), node
    )


def _fabric_env(state, infiniband, hardware, overrides):
    return nccl_tests_plan.fabric_env(state or None, infiniband or None, hardware or {}, overrides or {})


def _report(runs, name, kind, profile, simulated, fabric, hosts=None):
    return nccl_tests_plan.report(name, kind, profile, simulated, fabric, list(runs or []), hosts)


def _plan_runs(stored, benchmarks, rerun, node_inputs, group_inputs=None, group=""):
    return nccl_tests_plan.plan_runs(stored or {}, list(benchmarks), rerun, node_inputs, group_inputs or None, group)


def _records(runs, results, measured_at, gate, metric, gdr_mode, gdr_expected=None):
    return nccl_tests_plan.records(list(runs), list(results or []), measured_at, gate, metric, gdr_mode, gdr_expected)


def _user_problem(user, entry):
    return nccl_tests_plan.user_problem(str(user), list(entry) if entry is not None else None)


class FilterModule:
    def filters(self):
        return {
            "nccl_tests_input_problems": _input_problems,
            "nccl_tests_fabric_env": _fabric_env,
            "nccl_tests_report": _report,
            "nccl_tests_plan_runs": _plan_runs,
            "nccl_tests_records": _records,
            "nccl_tests_user_problem": _user_problem,
        }
