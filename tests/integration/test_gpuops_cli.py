"""The gpuops command end to end on the bench: `gpuops up --stage baseline` on two bench nodes, one pointed at a
mirror that refuses connections (it fails in the stage, the other node finishes it), the exit status, the log lines
and the run's artifacts; the fault removed, `gpuops resume` runs that node alone from its stage; `gpuops runs` lists
both runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from preflight_harness import bench_nodes

ROOT = Path(__file__).resolve().parents[2]
GPUOPS = Path(sys.executable).parent / "gpuops"
GROUP = "cli"


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    specs = [{"name": f"{GROUP}0{n}", "image": "debian12"} for n in (1, 2)]
    with bench_nodes(tmp_path_factory, GROUP, specs, ["rack_cli", "bench_container"]) as nodes:
        (nodes.inventory.parent / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
        yield nodes.inventory


def gpuops(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    # From a directory of its own: the command finds the collection, not the working directory.
    return subprocess.run([str(GPUOPS), *args, "--runs-dir", str(tmp / "runs")], cwd=tmp, capture_output=True,
                          text=True, check=False, timeout=1200)  # fmt: skip


def test_up_then_resume_the_node_that_failed(rack: Path) -> None:
    tmp = rack.parent
    (tmp / "host_vars").mkdir(exist_ok=True)
    (tmp / "host_vars" / f"{GROUP}02.yml").write_text("gpuops_mirror_url: http://gpuops-mirror:9\n")
    up = gpuops(tmp, "up", "-i", str(rack), "--stage", "baseline", "-e", "gpuops_serial=100%", "--progress", "plain")
    assert up.returncode == 2, up.stdout[-4000:] + up.stderr[-2000:]
    log = up.stdout
    assert "stage baseline: OS baseline" in log
    # Why, with the command's own words; the other node finished the stage, and the rollout brake stopped the run.
    failed = f"{GROUP}02: FAILED in baseline, task 'Refresh the package index when it is over an hour old': "
    assert failed + "non-zero return code: " in log and "gpuops-mirror:9" in log.split(failed)[1].split("\n")[0], log
    assert f"{GROUP}01: halted by the rollout brake after baseline (baseline changed)" in log, log[-4000:]
    (first,) = json.loads(gpuops(tmp, "runs", "--json").stdout)
    assert first["rc"] == 2 and list(first["stopped"]) == [f"{GROUP}02"] and first["tags"] == "baseline"
    assert first["unfinished"] == {f"{GROUP}02": "baseline"} and list(first["halted"]) == [f"{GROUP}01"]
    artifacts = Path(first["artifacts"])
    assert (artifacts / "status").read_text() == "failed" and "PLAY RECAP" in (artifacts / "stdout").read_text()
    assert f"gpuops resume {first['run_id']}" in log

    (tmp / "host_vars" / f"{GROUP}02.yml").unlink()
    resumed = gpuops(tmp, "resume", first["run_id"], "--progress", "plain")
    assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-2000:]
    runs = json.loads(gpuops(tmp, "runs", "--json").stdout)
    again = runs[-1]
    assert (again["resumed"], again["limit"], again["stages"], again["stopped"], again["unfinished"]) == (
        first["run_id"], f"{GROUP}02", ["baseline"], {}, {})  # fmt: skip
    assert list(again["nodes"]) == [f"{GROUP}02"] and again["options"] == ["-e", "gpuops_serial=100%"]
    command = json.loads((Path(again["artifacts"]) / "command").read_text())["command"]
    assert command[command.index("--limit") + 1] == f"{GROUP}02"
    listing = gpuops(tmp, "runs").stdout
    assert f"stopped: {GROUP}02 (baseline)" in listing and again["run_id"] in listing
