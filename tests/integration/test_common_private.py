"""_common is private: run as a play's role or included on its own, it refuses, and says what to run instead.

Controller-side only (the fail connects to no host). The stage roles never run its main tasks: they import its task
files (tasks_from), which every stage's run shows.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml
from preflight_harness import ROOT, unfold

PLAYS = {
    "play_role": [{"hosts": "localhost", "gather_facts": False, "roles": ["gpuops.bringup._common"]}],
    "include_role": [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [{"ansible.builtin.include_role": {"name": "gpuops.bringup._common"}}],
        }
    ],
}


@pytest.mark.parametrize("shape", sorted(PLAYS))
def test_common_refuses_to_run_on_its_own(tmp_path, shape):
    playbook = tmp_path / "common.yml"
    playbook.write_text(yaml.safe_dump(PLAYS[shape]))
    proc = subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", str(playbook)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    output = unfold(proc.stdout + proc.stderr)
    assert proc.returncode == 2, output[-3000:]
    assert "gpuops.bringup._common is private and does nothing on its own." in output, output[-3000:]
    assert "Fix: run a stage's role or playbook" in output, output[-3000:]
