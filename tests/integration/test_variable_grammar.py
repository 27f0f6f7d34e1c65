"""Every variable a bad value can hurt, given that value, stops its role's preflight before any change, with the
variable, the value and the fix (variable_cases.BAD: values that would rewrite the file or command the variable goes
into, or leave a wait unbounded). And booleans given on the command line (-e name=true, a string) pass.

One ansible-playbook --check run per role, side by side, each case a host on this machine (the check is the first
task of the role's preflight, so a case reads nothing else). One run each: a play whose every host fails ends the
whole run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from preflight_harness import ROOT, unfold
from variable_cases import BAD

ROLES = ("os_baseline", "acceptance", "cuda_toolkit", "k8s_node", "nccl_tests", "nvidia_container_toolkit",
         "nvidia_driver", "rdma_fabric")  # fmt: skip
# Every role's preflight checks the gpuops_* settings with its own variables: they run under os_baseline's play.
PREFIXES = {"gpuops": "os_baseline", **{role: role for role in ROLES}}
TAGS = [f"{role}_preflight" for role in ROLES]
H100 = {
    "profile": "hgx_h100_8gpu",
    "gpu": {"count": 8, "model": "NVIDIA H100 80GB HBM3", "nvswitch": True, "architecture": "hopper"},
    "infiniband": {"ports": 8, "rate_gbps": 400, "link_layer": "InfiniBand"},
}
# Checked only where an upgrade drains through Kubernetes: unit-tested in tests/unit (test_variables.py).
WHERE_USED = ("nvidia_driver_kubernetes_node_name",)
CASES = {
    f"{name}-{index}": (name, value, expected)
    for name, values in BAD.items()
    if name not in WHERE_USED
    for index, (value, expected) in enumerate(values)
}


def role_of(name: str) -> str:
    return next(role for prefix, role in sorted(PREFIXES.items(), key=lambda p: -len(p[0])) if name.startswith(prefix))


def host_of(case: str) -> str:
    # Host names Kubernetes takes as Node names (k8s_node_node_name's default is the inventory name).
    return case.replace("_", "-")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("grammar")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "gpuops_hardware": H100}
    groups: dict[str, dict] = {role: {} for role in ROLES}
    for case, (name, value, _expected) in CASES.items():
        groups[role_of(name)][host_of(case)] = {**local, name: value}
    procs = {}
    for role, hosts in groups.items():
        (base / f"{role}.json").write_text(json.dumps({"all": {"hosts": hosts}}))
        play = [{"name": role, "hosts": "all", "gather_facts": False, "roles": [f"gpuops.bringup.{role}"]}]
        (base / f"{role}.play.json").write_text(json.dumps(play))
        procs[role] = subprocess.Popen(
            ["ansible-playbook", "--inventory", str(base / f"{role}.json"), "--check", "--tags", ",".join(TAGS),
             str(base / f"{role}.play.json")],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"},
        )  # fmt: skip
    merged: dict = {"plays": [], "stats": {}}
    for role, proc in procs.items():
        out, err = proc.communicate()
        try:
            result = json.loads(out)
        except json.JSONDecodeError as error:
            raise AssertionError(f"no JSON from ansible-playbook ({role}):\n{(out + err)[-3000:]}") from error
        merged["plays"] += result["plays"]
        merged["stats"].update(result["stats"])
    return merged


def failure(result: dict, host: str) -> tuple[dict, str]:
    """The host's stats and the message of its failed task."""
    messages = [
        task["hosts"][host].get("msg", "")
        for play in result["plays"]
        for task in play["tasks"]
        if task["hosts"].get(host, {}).get("failed")
    ]
    return result["stats"].get(host, {}), unfold(" ".join(str(m) for m in messages))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_value_stops_the_role_before_any_change(run, case):
    name, _value, expected = CASES[case]
    host = host_of(case)
    stats, message = failure(run, host)
    assert (stats.get("failures"), stats.get("changed")) == (1, 0), (stats, message)
    if message.startswith("Validation of arguments failed"):
        # A value of the wrong type stops at the role's argument specification first, which names it too.
        assert f"argument '{name}'" in message, message
        return
    assert f"{host}: " in message and f"{name} " in message, message
    assert unfold(expected) in message and "Fix: " in message, message


def preflight_with(extra: list[str]) -> subprocess.CompletedProcess:
    argv = ["ansible-playbook", "--inventory", "localhost,", "--connection", "local", "--check", "--tags",
            "os_baseline_preflight", "-e", f"ansible_python_interpreter={sys.executable}", *extra,
            str(ROOT / "tests" / "integration" / "preflight.yml")]  # fmt: skip
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)


WORDS = {
    "gpuops_kubernetes_join": "on",
    "os_baseline_blacklist_nouveau": "true",
    "os_baseline_memlock_unlimited": "True",
    "os_baseline_disable_swap": "yes",
    "os_baseline_time_sync": "false",
    "os_baseline_kernel_hold": "1",
    "os_baseline_manage_os_sources": "false",
}


def test_booleans_from_the_command_line_pass() -> None:
    """-e os_baseline_reboot_ok=no and friends are strings: Ansible 2.19 refused them in conditions."""
    extra = [
        arg for name, value in {**WORDS, "os_baseline_reboot_ok": "no"}.items() for arg in ("-e", f"{name}={value}")
    ]
    # No kernel argument to add: no reboot needed on this machine.
    proc = preflight_with([*extra, "-e", '{"os_baseline_kernel_cmdline": []}'])
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert re.search(r"localhost\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", proc.stdout), output[-2000:]
