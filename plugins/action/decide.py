# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs on the controller: one stage decision (a module_utils function's result, computed by its filter in the
task's arguments) becomes the task's registered result, and the task fails with every problem the decision names.

One task where a stage used two (set_fact, then assert on its problems): the decision is evaluated once, its keys
read as `<registered>.<key>` like a fact's, and a node with problems stops with all of them in one message.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpuops.bringup.plugins.module_utils import reboot as reboot_contract

# Keys Ansible reads from a task's result: a decision holding one would change what Ansible makes of the task.
RESERVED = frozenset(
    (
        "ansible_facts",
        "changed",
        "deprecations",
        "diff",
        "exception",
        "failed",
        "invocation",
        "msg",
        "rc",
        "results",
        "skip_reason",
        "skipped",
        "stderr",
        "stdout",
        "unreachable",
    )
)


def _strings(value):
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def decision_result(decision, reboot=None, host=None, check_mode=False):
    """The task result for a decision: its keys and changed=false, failed with the joined problems when it has
    any; its warnings (a list, where it has one) are Ansible's warnings, shown with the task. A decision that is no
    mapping, lacks its problems list or holds another key Ansible reads is a caller's bug.

    reboot ({role, allowed, change}, or None): the reboot contract's gate (module_utils reboot.gate) over the
    decision's reboot_reasons, where it has no other problem: a refused reboot is its problem, a preview or an
    allowed reboot a warning."""
    if not isinstance(decision, Mapping):
        raise AnsibleActionFail(f"decide: decision must be a mapping, not {type(decision).__name__}")
    problems = decision.get("problems")
    if not _strings(problems):
        raise AnsibleActionFail("decide: the decision's problems must be a list of strings")
    if not _strings(decision.get("warnings", [])):
        raise AnsibleActionFail("decide: the decision's warnings must be a list of strings")
    reserved = sorted(RESERVED.intersection(decision) | {k for k in decision if str(k).startswith("_ansible")})
    if reserved:
        raise AnsibleActionFail(f"decide: the decision holds keys Ansible reads from a result: {', '.join(reserved)}")
    result = dict(decision, changed=False)
    if reboot is not None and not problems:
        reasons = decision.get("reboot_reasons")
        if not _strings(reasons):
            raise AnsibleActionFail(
                "decide: a decision the reboot gate reads must hold reboot_reasons, a list of strings"
            )
        gated = reboot_contract.gate(host=host, reasons=reasons, check_mode=check_mode, **reboot)
        problems = [gated["problem"]] if gated["problem"] else []
        if gated["notice"]:
            result["warnings"] = [*decision.get("warnings", []), gated["notice"]]
    if problems:
        result.update(failed=True, msg=" | ".join(problems))
    return result


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("decision", "reboot"))
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(
            argument_spec={
                "decision": {"type": "dict", "required": True},
                "reboot": {
                    "type": "dict",
                    "options": {
                        "role": {"type": "str", "required": True},
                        # A bool: -e <role>_reboot_ok=false on the command line is the string "false".
                        "allowed": {"type": "bool", "required": True},
                        "change": {"type": "str", "required": True},
                    },
                },
            },
        )
        result.update(
            decision_result(
                args["decision"],
                args["reboot"],
                task_vars.get("inventory_hostname"),
                bool(self._play_context.check_mode),
            )
        )
        return result
