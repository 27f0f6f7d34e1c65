"""A fault on one node stops that node alone, with its own status; a re-run recovers it without hand cleanup.

Two bench nodes run the real stage playbook. The second is pointed at a
mirror that refuses connections, so its package index cannot be refreshed
half-way through the stage; the first must finish. Then the fault is removed
and the playbook run again, with no cleanup in between: both nodes converge,
and a third run changes nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "bench" / "bench.py"
GROUP = "fault"
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fault")
    inventory = tmp / "hosts.json"
    # The hardware profiles live beside the shipped inventories.
    (tmp / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
    specs = [{"name": "fault01", "image": "debian12"}, {"name": "fault02", "image": "debian12"}]
    subprocess.run(
        [sys.executable, str(BENCH), "nodes", "up", "--prefix", GROUP, json.dumps(specs), "--inventory",
         str(inventory), "--groups", "rack_fault,bench_container"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    try:
        yield inventory
    finally:
        subprocess.run([sys.executable, str(BENCH), "nodes", "down", GROUP], check=True)


def play(inventory: Path) -> tuple[int, str, dict[str, tuple[int, int]]]:
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(inventory), "playbooks/baseline.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1"},
    )
    recap = {
        host: (int(changed), int(failed) + int(unreachable))
        for host, changed, unreachable, failed in RECAP.findall(proc.stdout)
    }
    return proc.returncode, proc.stdout + proc.stderr, recap


def test_fault_on_one_node_then_recovery(rack: Path) -> None:
    host_vars = rack.parent / "host_vars"
    host_vars.mkdir()
    (host_vars / "fault02.yml").write_text("gpuops_mirror_url: http://gpuops-mirror:9\n")

    rc, output, recap = play(rack)
    assert rc != 0
    assert recap["fault01"][1] == 0, output[-4000:]
    assert recap["fault02"][1] == 1, output[-4000:]
    failure = output[output.index("fatal: [fault02]") :]
    assert "Refresh the package index" in output[: output.index("fatal: [fault02]")].rsplit("TASK [", 1)[1]
    assert "gpuops-mirror:9" in failure[:3000]

    (host_vars / "fault02.yml").unlink()
    rc, output, recap = play(rack)
    assert rc == 0, output[-4000:]
    assert recap["fault02"][0] > 0
    assert all(failed == 0 for _changed, failed in recap.values())

    rc, output, recap = play(rack)
    assert rc == 0, output[-4000:]
    assert recap == {"fault01": (0, 0), "fault02": (0, 0)}, output[-4000:]
