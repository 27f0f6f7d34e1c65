"""A fault on one node stops that node with its own status, the rollout brake stops the rack, and a re-run recovers
without hand cleanup.

Three bench nodes run the real stage playbook (baseline: it is cheap, and in batches like every disruptive stage). A
fault is a node pointed at a mirror that refuses connections, so its package index cannot be refreshed half-way
through the stage. With the default batches (a canary node first) a fault on the canary leaves the other two
untouched; with batches of two, the faulty node's batch mate finishes its stage and the third node is not touched.
Then the fault is removed and the playbook run again, with no cleanup in between: every node converges, and a further
run changes nothing.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from preflight_harness import ROOT, bench_nodes

GROUP = "fault"
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    specs = [{"name": f"fault0{n}", "image": "debian12"} for n in (1, 2, 3)]
    with bench_nodes(tmp_path_factory, GROUP, specs, ["rack_fault", "bench_container"]) as nodes:
        # The hardware profiles live beside the shipped inventories.
        (nodes.inventory.parent / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
        yield nodes.inventory


def play(inventory: Path, *extra: str) -> tuple[int, str, dict[str, tuple[int, int]]]:
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(inventory), *extra, "playbooks/os_baseline.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    recap = {
        host: (int(changed), int(failed) + int(unreachable))
        for host, changed, unreachable, failed in RECAP.findall(proc.stdout)
    }
    return proc.returncode, proc.stdout + proc.stderr, recap


def stage_play(output: str) -> str:
    """The output from the stage's own play on: before it, stage_inputs.yml checks every node from the controller."""
    start = output.find("PLAY [Stage 1: OS baseline]")
    assert start > 0, output[-4000:]
    return output[start:]


def fault(rack: Path, node: str | None) -> None:
    """Point node (or none) at a mirror port nothing listens on."""
    host_vars = rack.parent / "host_vars"
    host_vars.mkdir(exist_ok=True)
    for old in host_vars.glob("*.yml"):
        old.unlink()
    if node:
        (host_vars / f"{node}.yml").write_text("gpuops_mirror_url: http://gpuops-mirror:9\n")


def test_a_failed_canary_leaves_the_rack_untouched(rack: Path) -> None:
    fault(rack, "fault01")
    rc, output, recap = play(rack)
    assert rc != 0
    assert recap["fault01"][1] == 1, output[-4000:]
    # Never started: only the controller-side input check (stage_inputs.yml) ran for them, nothing changed, no task
    # of theirs in the stage's play.
    assert recap["fault02"] == (0, 0) and recap["fault03"] == (0, 0), output[-4000:]
    stage = stage_play(output)
    assert "[fault02]" not in stage and "[fault03]" not in stage, stage[-4000:]


def test_a_batch_finishes_then_the_rollout_stops(rack: Path) -> None:
    fault(rack, "fault02")
    rc, output, recap = play(rack, "-e", "gpuops_serial=2")
    assert rc != 0
    # fault01 finished the stage (its verification ran) before the brake failed the batch.
    verified = output.index("TASK [gpuops.bringup.os_baseline : Check the live state against the configuration]")
    assert re.match(r"[^\n]*\n(ok|changed): \[fault01\]", output[verified:]), output[-4000:]
    assert "1 of 2 node(s) of this batch failed (fault02), more than gpuops_max_fail_percentage (0 %)" in output
    failure = output[output.index("fatal: [fault02]") :]
    assert "Refresh the package index" in output[: output.index("fatal: [fault02]")].rsplit("TASK [", 1)[1]
    assert "gpuops-mirror:9" in failure[:3000]
    assert recap["fault03"] == (0, 0) and "[fault03]" not in stage_play(output), output[-4000:]


def test_a_rerun_recovers_and_then_changes_nothing(rack: Path) -> None:
    # No brake needed here: one batch for the whole rack.
    fault(rack, None)
    rc, output, recap = play(rack, "-e", "gpuops_serial=100%")
    assert rc == 0, output[-4000:]
    assert recap["fault02"][0] > 0 and recap["fault03"][0] > 0
    assert all(failed == 0 for _changed, failed in recap.values())

    rc, output, recap = play(rack, "-e", "gpuops_serial=100%")
    assert rc == 0, output[-4000:]
    assert recap == {"fault01": (0, 0), "fault02": (0, 0), "fault03": (0, 0)}, output[-4000:]
