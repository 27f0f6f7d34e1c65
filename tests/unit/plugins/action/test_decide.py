"""The decide action, run by ansible-playbook on the controller: a decision becomes the registered result (ok, never
changed), problems fail that host alone with all of them, and a decision Ansible would misread is refused."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.gpuops.bringup.plugins.action.decide import decision_result

ROOT = Path(__file__).resolve().parents[4]
HOLDS = "the decision holds keys Ansible reads from a result"
# Two hosts with their own decision; the second task reads the first one's registered keys.
PLAYBOOK = """\
- name: Decide
  hosts: all
  gather_facts: false
  tasks:
    - name: Work out the plan and check it
      gpuops.bringup.decide:
        decision: "{{ decisions[inventory_hostname] }}"
      register: __decision
    - name: Use the plan
      ansible.builtin.debug:
        msg: "{{ __decision.plan.steps | join(',') }}"
"""


def play(tmp_path, env, decisions, check=False):
    playbook = tmp_path / "decide.yml"
    playbook.write_text(PLAYBOOK)
    argv = ["ansible-playbook", "-i", ",".join(decisions) + ",", "-c", "local", str(playbook),
            "-e", json.dumps({"decisions": decisions, "ansible_python_interpreter": "auto_silent"})]  # fmt: skip
    if check:
        argv.append("--check")
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    out = json.loads(proc.stdout)
    return proc.returncode, out["plays"][0]["tasks"], out["stats"]


@pytest.mark.parametrize("check", [False, True])
def test_a_decision_without_problems_is_the_registered_result(tmp_path, ansible_env, check):
    rc, tasks, stats = play(tmp_path, ansible_env, {"n1": {"problems": [], "plan": {"steps": ["a", "b"]}}}, check)
    assert rc == 0
    decided = tasks[0]["hosts"]["n1"]
    assert decided["changed"] is False and not decided.get("failed")
    assert decided["plan"] == {"steps": ["a", "b"]}
    assert tasks[1]["hosts"]["n1"]["msg"] == "a,b"
    assert stats["n1"]["changed"] == 0


def test_problems_fail_their_host_alone_with_every_problem(tmp_path, ansible_env):
    decisions = {
        "n1": {"problems": ["n1: x is 1: not a name. Fix: a name", "n1: y is missing"], "plan": {"steps": []}},
        "n2": {"problems": [], "plan": {"steps": ["c"]}},
    }
    rc, tasks, stats = play(tmp_path, ansible_env, decisions)
    assert rc == 2
    failed = tasks[0]["hosts"]["n1"]
    assert failed["failed"] is True
    assert failed["msg"] == "n1: x is 1: not a name. Fix: a name | n1: y is missing"
    assert "n1" not in tasks[1]["hosts"]
    assert tasks[1]["hosts"]["n2"]["msg"] == "c"
    assert stats["n1"]["failures"] == 1 and stats["n2"]["failures"] == 0


def test_a_decisions_warnings_are_ansibles_and_fail_nothing(tmp_path, ansible_env):
    warning = "n1 runs kernel 6.1.0-40-amd64 but 6.1.0-41-amd64 is installed too"
    rc, tasks, _stats = play(
        tmp_path, ansible_env, {"n1": {"problems": [], "warnings": [warning], "plan": {"steps": []}}}
    )
    assert rc == 0
    result = tasks[0]["hosts"]["n1"]
    assert not result.get("failed")
    assert [str(w) for w in result["warnings"]] == [warning]


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        ({"problems": [], "changed": True}, f"{HOLDS}: changed"),
        ({"problems": [], "results": [], "msg": "x"}, f"{HOLDS}: msg, results"),
        ({"problems": [], "_ansible_no_log": True}, f"{HOLDS}: _ansible_no_log"),
        ({"plan": {}}, "the decision's problems must be a list of strings"),
        ({"problems": "one"}, "the decision's problems must be a list of strings"),
        ({"problems": [None]}, "the decision's problems must be a list of strings"),
        ({"problems": [], "warnings": "one"}, "the decision's warnings must be a list of strings"),
        ([], "decision must be a mapping, not list"),
    ],
)
def test_a_decision_ansible_would_misread_is_refused(decision, message):
    with pytest.raises(AnsibleActionFail, match=message):
        decision_result(decision)


def test_a_misread_decision_fails_the_task_through_ansible(tmp_path, ansible_env):
    rc, tasks, _stats = play(tmp_path, ansible_env, {"n1": {"problems": [], "failed": False, "plan": {"steps": []}}})
    assert rc == 2
    result = tasks[0]["hosts"]["n1"]
    assert result["failed"] is True
    assert f"{HOLDS}: failed" in result["msg"]


def test_the_result_is_the_decision_and_unchanged():
    assert decision_result({"problems": [], "a": 1}) == {"problems": [], "a": 1, "changed": False}
    assert decision_result({"problems": ["p"]}) == {"problems": ["p"], "changed": False, "failed": True, "msg": "p"}
    assert decision_result({"problems": [], "warnings": ["w"]}) == {"problems": [], "warnings": ["w"], "changed": False}


# The reboot contract's gate over a decision's reboot_reasons (module_utils reboot.gate; through Ansible in
# tests/integration/test_reboot_gate.py).
GATE = {"role": "rdma_fabric", "allowed": False, "change": "install DOCA-OFED"}
STOP = (
    "n1 will need a reboot (the profile's kernel modules replace ib_core) and rdma_fabric_reboot_ok is false, so "
    "nothing was changed. Fix: set rdma_fabric_reboot_ok: true to let the role install DOCA-OFED and reboot the node "
    "(drain it first if it runs workloads)."
)
NEEDS = {"problems": [], "reboot_reasons": ["the profile's kernel modules replace ib_core"]}


def test_a_refused_reboot_is_the_decisions_problem():
    result = decision_result(NEEDS, GATE, "n1")
    assert (result["failed"], result["msg"], result["problems"]) == (True, STOP, [])


def test_a_refused_reboot_in_check_mode_is_a_warning_and_the_preview_goes_on():
    result = decision_result({**NEEDS, "warnings": ["w"]}, GATE, "n1", check_mode=True)
    assert "failed" not in result
    assert result["warnings"] == ["w", f"Check mode, so the preview goes on; a real run stops here: {STOP}"]


@pytest.mark.parametrize("check_mode", [False, True])
def test_an_allowed_reboot_is_announced(check_mode):
    result = decision_result(NEEDS, {**GATE, "allowed": True}, "n1", check_mode=check_mode)
    assert "failed" not in result
    assert result["warnings"] == [
        "n1 will need a reboot (the profile's kernel modules replace ib_core), which rdma_fabric_reboot_ok allows: "
        "the role will install DOCA-OFED and reboot the node."
    ]


def test_no_reboot_needed_says_nothing():
    assert decision_result({"problems": [], "reboot_reasons": []}, GATE, "n1") == {
        "problems": [],
        "reboot_reasons": [],
        "changed": False,
    }


def test_a_node_with_problems_is_not_asked_for_a_reboot():
    result = decision_result({**NEEDS, "problems": ["p"]}, GATE, "n1")
    assert (result["msg"], "warnings" in result) == ("p", False)


@pytest.mark.parametrize("reasons", [None, "one", [1]])
def test_a_gated_decision_without_its_reasons_list_is_refused(reasons):
    decision = {"problems": []} if reasons is None else {"problems": [], "reboot_reasons": reasons}
    with pytest.raises(AnsibleActionFail, match="must hold reboot_reasons, a list of strings"):
        decision_result(decision, GATE, "n1")
