"""The kubeconfig_check action, run by ansible-playbook on the controller: missing fails (or is returned, for a caller
that reports it with its other problems), open to others warns."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
PLAYBOOK = """\
- name: Check the kubeconfig
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Check the kubeconfig
      gpuops.bringup.kubeconfig_check:
        variable: k8s_node_kubeconfig
        path: "{{ kubeconfig }}"
        fail_on_problem: "{{ fail_on_problem }}"
"""


def check(tmp_path, env, kubeconfig, fail_on_problem=True):
    playbook = tmp_path / "check.yml"
    playbook.write_text(PLAYBOOK)
    proc = subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", str(playbook),
         "-e", json.dumps({"kubeconfig": kubeconfig, "fail_on_problem": fail_on_problem})],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    return proc.returncode, result


def test_a_private_kubeconfig_passes_quietly(tmp_path, ansible_env):
    config = tmp_path / "admin.conf"
    config.write_text("apiVersion: v1\nkind: Config\n")
    config.chmod(0o600)
    rc, result = check(tmp_path, ansible_env, str(config))
    assert rc == 0 and not result.get("failed")
    assert not result.get("warnings")
    assert result["path"] == str(config)


def test_a_kubeconfig_others_may_read_is_a_warning(tmp_path, ansible_env):
    config = tmp_path / "admin.conf"
    config.write_text("apiVersion: v1\nkind: Config\n")
    config.chmod(0o644)
    rc, result = check(tmp_path, ansible_env, str(config))
    assert rc == 0 and not result.get("failed")
    assert [str(w) for w in result["warnings"]] == [
        f"k8s_node_kubeconfig ({config}) is mode 0644: its credentials to the cluster are open to others on the "
        "controller. Fix: chmod 600 it"
    ]


def test_a_missing_kubeconfig_fails_naming_it(tmp_path, ansible_env):
    rc, result = check(tmp_path, ansible_env, "/nonexistent/admin.conf")
    assert rc != 0 and result["failed"] is True
    assert result["msg"].startswith('k8s_node_kubeconfig is "/nonexistent/admin.conf", which is not a file on the')


def test_a_missing_kubeconfig_is_returned_to_a_caller_that_reports_it_with_its_other_problems(tmp_path, ansible_env):
    rc, result = check(tmp_path, ansible_env, "/nonexistent/admin.conf", fail_on_problem=False)
    assert rc == 0 and not result.get("failed")
    assert result["problem"].startswith('k8s_node_kubeconfig is "/nonexistent/admin.conf", which is not a file on the')
