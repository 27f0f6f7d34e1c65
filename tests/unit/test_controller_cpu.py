"""tests/bench/controller_cpu.py, the measuring tool: its refusal without ansible-playbook's arguments, and its report
of the workers' records."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tests" / "bench" / "controller_cpu.py"
SPEC = importlib.util.spec_from_file_location("controller_cpu_under_test", TOOL)
controller_cpu = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(controller_cpu)


def test_it_needs_ansible_playbooks_arguments():
    proc = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "give ansible-playbook's arguments after --" in proc.stderr


def test_the_report_sums_each_task_over_its_hosts(tmp_path, capsys):
    records = tmp_path / "workers.jsonl"
    rows = [
        {"task": "Read", "action": "gpuops.bringup.os_facts", "self": 0.25, "children": 0.05},
        {"task": "Read", "action": "gpuops.bringup.os_facts", "self": 0.15, "children": 0.05},
        {"task": "Check", "action": "ansible.builtin.assert", "self": 0.1, "children": 0.0},
    ]
    records.write_text("".join(json.dumps(row) + "\n" for row in rows))
    controller_cpu.report(records, main_s=1.5, wall_s=12.0, top=1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "wall 12.0 s; main process 1.50 s CPU; 3 workers 0.50 s CPU (+ 0.10 s in their children: SSH)"
    assert out[2] == "   0.50     2  0.250  gpuops.bringup.os_facts / Read"
    assert len(out) == 3
