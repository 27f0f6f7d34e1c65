"""The gpuops command end to end on the bench, as a new user has it: `pip install -r requirements.txt .` into a fresh
virtual environment (production dependencies only) and the collection's tarball installed into a fresh path, run from
a directory outside this repository with none of its configuration. `gpuops up --stage os_baseline` on two bench nodes,
one pointed at a mirror that refuses connections (it fails in the stage, the other node finishes it), the exit status,
the log lines and the run's artifacts; the fault removed, `gpuops resume` runs that node alone from its stage;
`gpuops accept` judges both and prints the report's path; `gpuops runs` lists the runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from preflight_harness import bench_nodes

ROOT = Path(__file__).resolve().parents[2]
GROUP = "cli"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the gpuops of a fresh virtual environment, the environment to run it in: the collection from its tarball in
    a fresh path, the collections it declares from the `ansible` package the requirements install, no setting of this
    repository's)."""
    tmp = tmp_path_factory.mktemp("installed")
    venv, collections = tmp / "venv", tmp / "collections"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-r", str(ROOT / "requirements.txt"), str(ROOT)], check=True, capture_output=True, text=True)
    listed = subprocess.run([str(venv / "bin" / "pip"), "list", "--format", "json"], check=True, capture_output=True,
                            text=True)  # fmt: skip
    assert not {p["name"] for p in json.loads(listed.stdout)} & {"pytest", "molecule", "ansible-lint"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv / 'bin'}:{env['PATH']}", ANSIBLE_COLLECTIONS_PATH=str(collections),
               ANSIBLE_HOME=str(tmp / "home"), ANSIBLE_NOCOLOR="1")  # fmt: skip
    galaxy = str(venv / "bin" / "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", "--output-path", str(tmp), str(ROOT)], cwd=tmp, env=env,
                   check=True, capture_output=True)  # fmt: skip
    (tarball,) = tmp.glob("gpuops-bringup-*.tar.gz")
    # The declared collections are the `ansible` package's, in the new environment's site-packages.
    subprocess.run([galaxy, "collection", "install", "--offline", "--no-deps", str(tarball), "-p", str(collections)],
                   cwd=tmp, env=env, check=True, capture_output=True)  # fmt: skip
    return venv / "bin" / "gpuops", env


@pytest.fixture(scope="module")
def rack(tmp_path_factory, installed):
    specs = [{"name": f"{GROUP}0{n}", "image": "debian12"} for n in (1, 2)]
    with bench_nodes(tmp_path_factory, GROUP, specs, ["rack_cli", "bench_container"]) as nodes:
        (nodes.inventory.parent / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
        yield nodes.inventory


def gpuops(installed, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    # From a directory of its own: the command finds the installed collection, not the working directory.
    command, env = installed
    return subprocess.run([str(command), *args, "--runs-dir", str(tmp / "runs")], cwd=tmp, env=env,
                          capture_output=True, text=True, check=False, timeout=1200)  # fmt: skip


def test_up_resume_and_accept(rack: Path, installed) -> None:
    tmp = rack.parent
    (tmp / "host_vars").mkdir(exist_ok=True)
    (tmp / "host_vars" / f"{GROUP}02.yml").write_text("gpuops_mirror_url: http://gpuops-mirror:9\n")
    up = gpuops(installed, tmp, "up", "-i", str(rack), "--stage", "os_baseline", "-e", "gpuops_serial=100%",
                "--progress", "plain")  # fmt: skip
    assert up.returncode == 2, up.stdout[-4000:] + up.stderr[-2000:]
    log = up.stdout
    assert "stage os_baseline: OS baseline" in log
    # Why, with the command's own words; the other node finished the stage, and the rollout brake stopped the run.
    failed = f"{GROUP}02: FAILED in os_baseline, task 'Refresh the package index when it is over an hour old': "
    assert failed + "non-zero return code: " in log and "gpuops-mirror:9" in log.split(failed)[1].split("\n")[0], log
    assert f"{GROUP}01: halted by the rollout brake after os_baseline (os_baseline changed)" in log, log[-4000:]
    (first,) = json.loads(gpuops(installed, tmp, "runs", "--json").stdout)
    assert first["rc"] == 2 and list(first["stopped"]) == [f"{GROUP}02"] and first["tags"] == "os_baseline"
    assert first["unfinished"] == {f"{GROUP}02": "os_baseline"} and list(first["halted"]) == [f"{GROUP}01"]
    artifacts = Path(first["artifacts"])
    assert (artifacts / "status").read_text() == "failed" and "PLAY RECAP" in (artifacts / "stdout").read_text()
    assert f"gpuops resume {first['run_id']}" in log

    (tmp / "host_vars" / f"{GROUP}02.yml").unlink()
    resumed = gpuops(installed, tmp, "resume", first["run_id"], "--progress", "plain")
    assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-2000:]
    runs = json.loads(gpuops(installed, tmp, "runs", "--json").stdout)
    again = runs[-1]
    assert (again["resumed"], again["limit"], again["stages"], again["stopped"], again["unfinished"]) == (
        first["run_id"], f"{GROUP}02", ["os_baseline"], {}, {})  # fmt: skip
    assert list(again["nodes"]) == [f"{GROUP}02"] and again["options"] == ["-e", "gpuops_serial=100%"]
    command = json.loads((Path(again["artifacts"]) / "command").read_text())["command"]
    assert command[command.index("--limit") + 1] == f"{GROUP}02"
    listing = gpuops(installed, tmp, "runs").stdout
    assert f"stopped: {GROUP}02 (os_baseline)" in listing and again["run_id"] in listing

    # Acceptance of both nodes: bench containers have no GPU, so neither is accepted (exit status 2), and the summary
    # names the run's report, in reports/ beside the inventory's directory.
    accepted = gpuops(installed, tmp, "accept", "-i", str(rack), "--progress", "plain")
    assert accepted.returncode == 2, accepted.stdout[-4000:] + accepted.stderr[-2000:]
    report = Path(accepted.stdout.split("\nreport: ")[1].split()[0])
    assert report.name == "report.html" and report.is_file() and report.parent.parent == tmp.parent / "reports"
    assert "acceptance" in json.loads(gpuops(installed, tmp, "runs", "--json").stdout)[-1]["stages"]


def test_the_demo_outside_a_checkout_says_where_it_runs(installed, tmp_path: Path) -> None:
    """The installed command has no bench: `gpuops demo` says so instead of failing on a missing file."""
    demo = gpuops(installed, tmp_path, "demo")
    assert demo.returncode != 0 and not list((tmp_path / "runs").glob("*/gpuops.json"))
    assert "the demo runs the bench of a checkout of the repository (make demo there)" in demo.stdout + demo.stderr
