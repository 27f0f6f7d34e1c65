"""managed_paths through Ansible on this machine (real files under a temporary directory): changed on the first run,
ok on the second, a check-mode run with --diff reports a drifted file and its diff without touching it, and a bad
entry is a failed task with the module's message."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml
from preflight_harness import ROOT


def play(tmp_path, paths, *args):
    """One ansible-playbook run of managed_paths on localhost: the task's result as the json callback has it."""
    playbook = tmp_path / "play.yml"
    task = {"gpuops.bringup.managed_paths": {"paths": paths, "owner": str(os.getuid()), "group": str(os.getgid())}}
    playbook.write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "tasks": [task]}]))
    interpreter = f"ansible_python_interpreter={sys.executable}"
    proc = subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", interpreter, *args, str(playbook)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"},
    )
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_changed_then_ok_then_check_mode_diff_without_change(tmp_path):
    root = tmp_path / "root"
    paths = [
        {"path": str(root), "state": "directory", "mode": "0755"},
        {"path": f"{root}/env.sh", "state": "file", "mode": "0644", "content": "export CUDA_HOME=/x\n"},
        {"path": f"{root}/include", "state": "link", "src": "/usr/include"},
    ]
    first = play(tmp_path, paths)
    assert first["changed"] and not first.get("failed") and len(first["changed_paths"]) == 3, first
    second = play(tmp_path, paths)
    assert not second["changed"] and second["changed_paths"] == {}, second
    (root / "env.sh").write_text("export CUDA_HOME=/y\n")
    preview = play(tmp_path, paths, "--check", "--diff")
    assert preview["changed"] and preview["changed_paths"] == {f"{root}/env.sh": ["content differs"]}, preview
    assert preview["diff"][0]["before"] == "export CUDA_HOME=/y\n"
    assert (root / "env.sh").read_text() == "export CUDA_HOME=/y\n"


def test_a_bad_entry_is_a_failed_task_with_the_modules_message(tmp_path):
    result = play(tmp_path, [{"path": f"{tmp_path}/x", "state": "link"}])
    assert result["failed"] and result["msg"] == "managed_paths: paths[0] is a link without src", result
    assert not result["changed"] and not (tmp_path / "x").exists()
