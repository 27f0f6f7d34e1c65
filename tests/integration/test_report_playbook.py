"""playbooks/report.yml through Ansible: the reports of a results directory made on another controller (here, the
golden node documents written as the acceptance stage writes them), and each way it refuses a directory, with the
fix; check mode writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The results directory is written by the collection's own code, as the acceptance stage writes it.
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.gpuops.bringup.plugins.module_utils import (  # noqa: E402
    acceptance_report,
    acceptance_results,
)

GOLDEN = ROOT / "tests" / "unit" / "plugins" / "module_utils" / "golden" / "acceptance"
RUN = {"run_id": "20261206T100000Z", "started_at": "2026-12-06T10:00:00Z", "finished_at": "2026-12-06T10:04:10Z",
       "operator": "ops", "collection": {"name": "gpuops.bringup", "version": "0.1.0"},
       "tools": {"ansible_core": "2.19.14"}}  # fmt: skip


@pytest.fixture
def run_dir(tmp_path):
    directory = tmp_path / "copied" / RUN["run_id"]
    entries = []
    for name in ("h100-healthy", "h100-gpu-missing"):
        document = {**json.loads((GOLDEN / f"{name}.json").read_text()), "node": name, "rack": "rack_a"}
        entries.append(acceptance_results.node_entry(acceptance_results.write_node(str(directory), document, {})))
    acceptance_results.write_run(str(directory), RUN, entries)
    return directory


def report(*args):
    command = ["ansible-playbook", "-i", "localhost,", "playbooks/report.yml", *args]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_the_reports_of_a_copied_run(run_dir):
    rc, output = report("-e", f"report_run_dir={run_dir}")
    assert rc == 0, output[-3000:]
    assert f"run 20261206T100000Z: report {run_dir}/report.html" in output
    assert sorted(p.name for p in run_dir.iterdir() if p.is_file()) == sorted(
        ["run.json", *acceptance_report.REPORTS.values()])  # fmt: skip
    assert "ok=3 changed=0 unreachable=0 failed=0" in output


def test_check_mode_writes_no_report(run_dir):
    rc, output = report("--check", "-e", f"report_run_dir={run_dir}")
    assert rc == 0, output[-3000:]
    assert "check mode: the reports of run 20261206T100000Z not written" in output
    assert not (run_dir / "report.html").exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "report_run_dir is unset: give the absolute path of one run's directory"),
        ("reports/20261206T100000Z", "report_run_dir is reports/20261206T100000Z: give the absolute path"),
        ("{parent}", "run.json cannot be read (No such file or directory): give the directory of one run"),
    ],
)
def test_a_directory_that_holds_no_run_is_refused(run_dir, value, message):
    args = [] if value is None else ["-e", f"report_run_dir={value.format(parent=run_dir.parent)}"]
    rc, output = report(*args)
    assert rc != 0 and message in output, output[-3000:]


def test_the_report_step_refuses_a_relative_directory():
    """The step itself, as another playbook would call it: a relative directory is refused with the fix."""
    proc = subprocess.run(
        ["ansible", "-i", "localhost,", "-c", "local", "localhost", "-m", "gpuops.bringup.acceptance_results",
         "-a", "step=report results_dir=reports/20261206T100000Z"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, output[-3000:]
    assert ("results_dir must be an absolute path, got 'reports/20261206T100000Z'. Fix: give the directory of one "
            "run") in output, output[-3000:]  # fmt: skip


def on_a_terminal(argv, cwd, columns=120):
    """A command's output on a pseudo-terminal of its own, as an operator's shell runs it."""
    import os
    import pty

    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": "40"}
    env.pop("CI", None)
    process = subprocess.Popen(argv, cwd=cwd, stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other end is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


def test_gpuops_report_on_a_terminal_draws_its_table_and_names_the_report(run_dir, tmp_path):
    """The gpuops command on a real terminal: it finds one (no --progress given), draws the live table with rich and
    ends with the report's path; the same command in a pipe writes plain lines without terminal codes."""
    gpuops = str(Path(sys.executable).parent / "gpuops")
    argv = [gpuops, "report", str(run_dir), "--runs-dir", str(tmp_path / "runs")]
    rc, output = on_a_terminal(argv, tmp_path)
    assert rc == 0, output[-3000:]
    assert "\x1b[" in output and "┏" in output and "gpuops.bringup.report" in output
    assert f"report: {run_dir}/report.html" in output.replace("\r", "")
    piped = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300)
    assert piped.returncode == 0 and "\x1b[" not in piped.stdout
    assert f"report: {run_dir}/report.html" in piped.stdout
