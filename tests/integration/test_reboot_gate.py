"""The reboot contract's gate (roles/_common/tasks/reboot_gate.yml), through Ansible: each stage's preflight includes
it with the reasons its changes need a reboot. A real run stops before any change unless <role>_reboot_ok; a dry run
previews the whole plan and says where the real run would stop; an allowed reboot is announced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: The gate
      ansible.builtin.include_role:
        name: gpuops.bringup._common
        tasks_from: reboot_gate.yml
      vars:
        __gpuops_reboot_role: nvidia_driver
        __gpuops_reboot_reasons: "{{ reasons }}"
        __gpuops_reboot_change: install the driver
    - name: After the gate
      ansible.builtin.debug:
        msg: the role goes on
"""
STOP = (
    "n1 will need a reboot (nouveau is loaded and holds the GPUs; the running kernel 6.1.0-40 is not one DKMS "
    "builds for) and nvidia_driver_reboot_ok is false, so nothing was changed. Fix: set nvidia_driver_reboot_ok: "
    "true to let the role install the driver and reboot the node (drain it first if it runs workloads)."
)
REASONS = ["nouveau is loaded and holds the GPUs", "the running kernel 6.1.0-40 is not one DKMS builds for"]


def run(tmp_path, check, reasons, reboot_ok):
    """(failed, messages) of host n1 through the gate."""
    (tmp_path / "play.yml").write_text(PLAY)
    extra = {"reasons": reasons, "nvidia_driver_reboot_ok": reboot_ok, "ansible_python_interpreter": sys.executable}
    (tmp_path / "vars.json").write_text(json.dumps(extra))
    argv = [
        "ansible-playbook",
        "-i",
        "n1,",
        "-c",
        "local",
        "-e",
        f"@{tmp_path / 'vars.json'}",
        str(tmp_path / "play.yml"),
    ]
    if check:
        argv.append("--check")
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"}
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120)
    result = json.loads(proc.stdout)
    messages = [task["hosts"]["n1"].get("msg", "") for play in result["plays"] for task in play["tasks"]
                if "n1" in task["hosts"] and not task["hosts"]["n1"].get("skipped")]  # fmt: skip
    return result["stats"]["n1"]["failures"] == 1, [" ".join(str(m).split()) for m in messages]


# The words -e nvidia_driver_reboot_ok=false and =no give (strings) are not truthy.
@pytest.mark.parametrize("reboot_ok", [False, "false", "no"])
def test_a_real_run_stops_before_any_change(tmp_path, reboot_ok):
    failed, messages = run(tmp_path, check=False, reasons=REASONS, reboot_ok=reboot_ok)
    assert failed and STOP in messages and "the role goes on" not in messages


@pytest.mark.parametrize("reboot_ok", [False, "false", "no"])
def test_a_dry_run_previews_and_says_where_the_real_run_would_stop(tmp_path, reboot_ok):
    failed, messages = run(tmp_path, check=True, reasons=REASONS, reboot_ok=reboot_ok)
    assert not failed
    assert f"Check mode, so the preview goes on; a real run stops here: {STOP}" in messages
    assert messages[-1] == "the role goes on"


@pytest.mark.parametrize("check", [False, True])
def test_an_allowed_reboot_is_announced_and_the_role_goes_on(tmp_path, check):
    failed, messages = run(tmp_path, check=check, reasons=REASONS, reboot_ok="true")
    assert not failed
    assert ("n1 will need a reboot (nouveau is loaded and holds the GPUs; the running kernel 6.1.0-40 is not one DKMS "
            "builds for), which nvidia_driver_reboot_ok allows: the role will install the driver and reboot the "
            "node.") in messages  # fmt: skip
    assert messages[-1] == "the role goes on"


@pytest.mark.parametrize("check", [False, True])
def test_no_reboot_needed_says_nothing(tmp_path, check):
    failed, messages = run(tmp_path, check=check, reasons=[], reboot_ok=False)
    assert not failed and messages[-1] == "the role goes on" and not any("reboot" in m for m in messages)
