"""The gpuops command's run machinery on a real ansible-runner run of a small playbook on this machine: two stages'
plays (tagged as site.yml's are), a node that fails in the first, one unreachable, one refused in the plays before
the stages, a report path in a message. What the run's document, the artifacts, the log lines, the live table and
the JSON say; and a resume that runs the stopped nodes only."""

from __future__ import annotations

import io
import json
import stat
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "cli"))

from gpuops import app, runs  # noqa: E402

PLAYBOOK = [
    {"name": "Inputs of every node before the first batch", "hosts": "all", "gather_facts": False,
     "tags": ["os_baseline", "baseline"],
     "tasks": [{"name": "Check the inputs",
                "ansible.builtin.assert": {"that": "not (bad_input | default(false))",
                                           "fail_msg": "bad_input is true"}}]},
    {"name": "Stage 1: OS baseline", "hosts": "all", "gather_facts": False, "tags": ["os_baseline", "baseline"],
     "tasks": [{"name": "Change something", "ansible.builtin.command": "true"},
               {"name": "Find the disk", "ansible.builtin.fail": {"msg": "disk /dev/sdb is missing"},
                "when": "inventory_hostname == 'n2' and not (fixed | default(false) | bool)"}]},
    {"name": "Stage 2: NVIDIA driver", "hosts": "all", "gather_facts": False, "tags": ["nvidia_driver", "driver"],
     "tasks": [{"name": "Say where the results are", "ansible.builtin.debug": {"msg": "report: /tmp/r/report.html"}}]},
]  # fmt: skip


@pytest.fixture
def rack(tmp_path):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    hosts = {"n1": local, "n2": local, "n4": {**local, "bad_input": True},
             "n3": {"ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_connection": "ssh"}}  # fmt: skip
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    playbook = tmp_path / "stages.yml"
    playbook.write_text(yaml.safe_dump(PLAYBOOK, sort_keys=False))
    return inventory, playbook, tmp_path / "runs"


def run(rack, argv, out):
    inventory, playbook, where = rack
    args = app.parser().parse_args(["up", "-i", str(inventory), "--runs-dir", str(where), *argv])
    return app.execute(args, str(playbook), [str(inventory)], ["os_baseline", "nvidia_driver"], args.limit, out=out)


def test_a_run_says_where_each_node_stopped_and_keeps_its_artifacts(rack):
    out = io.StringIO()
    document = run(rack, ["--progress", "plain"], out)
    assert document["rc"] == 2 and document["ansible_rc"] != 0
    stopped = document["stopped"]
    assert sorted(stopped) == ["n2", "n3", "n4"]
    assert stopped["n2"] == {"stage": "os_baseline", "state": "failed", "task": "Find the disk",
                             "reason": "disk /dev/sdb is missing"}  # fmt: skip
    assert (stopped["n3"]["stage"], stopped["n3"]["state"]) == ("os_baseline", "unreachable")
    # Failed in the inputs' play, before its stage: it stopped at that stage.
    assert (stopped["n4"]["stage"], stopped["n4"]["reason"]) == ("os_baseline", "bad_input is true")
    assert document["nodes"]["n1"]["os_baseline"]["state"] == "changed"
    assert document["nodes"]["n1"]["nvidia_driver"]["state"] == "ok" and "nvidia_driver" not in document["nodes"]["n2"]
    assert document["report"] == "/tmp/r/report.html"
    run_dir = rack[2] / document["run_id"]
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert json.loads((run_dir / "gpuops.json").read_text()) == document
    artifacts = Path(document["artifacts"])
    assert (artifacts / "rc").read_text().strip() == str(document["ansible_rc"])
    assert "PLAY RECAP" in (artifacts / "stdout").read_text() and list((artifacts / "job_events").iterdir())
    log = out.getvalue()
    assert "stage os_baseline: OS baseline" in log and "n2: FAILED in os_baseline, task 'Find the disk'" in log
    assert "n4: FAILED before its stage, task 'Check the inputs'" in log
    assert "n1: ok (os_baseline changed, nvidia_driver ok)" in log and "report: /tmp/r/report.html" in log
    assert f"gpuops resume {document['run_id']}" in log


def test_resume_runs_the_stopped_nodes_from_their_stage(rack):
    first = run(rack, ["--progress", "plain", "--limit", "n1,n2"], io.StringIO())
    assert sorted(first["stopped"]) == ["n2"]
    args = app.parser().parse_args(["resume", first["run_id"], "--runs-dir", str(rack[2]), "-e", "fixed=true",
                                    "--progress", "plain"])  # fmt: skip
    assert app.cmd_resume(args) == 0
    (again,) = [d for d in runs.listing(rack[2]) if d.get("resumed") == first["run_id"]]
    assert (again["limit"], again["stages"], again["stopped"]) == ("n2", ["os_baseline", "nvidia_driver"], {})
    assert sorted(again["nodes"]) == ["n2"]
    with pytest.raises(runs.RunError, match="nothing to resume"):
        runs.resume_plan(again)


def test_a_run_recorded_with_the_old_stage_names_resumes(rack):
    """A run of gpuops from before the stages had their roles' names (baseline, driver): its resume runs its stopped
    node through the stages under their names now, which the plays' tags carry."""
    first = run(rack, ["--progress", "plain", "--limit", "n1,n2"], io.StringIO())
    run_dir = rack[2] / first["run_id"]
    old = {"os_baseline": "baseline", "nvidia_driver": "driver"}
    runs.save(run_dir, {**first, "stages": ["baseline", "driver"], "tags": "baseline,driver",
                        "nodes": {n: {old[s]: c for s, c in by.items()} for n, by in first["nodes"].items()},
                        "unfinished": {"n2": "baseline"},
                        "stopped": {"n2": {**first["stopped"]["n2"], "stage": "baseline"}}})  # fmt: skip
    args = app.parser().parse_args(["resume", first["run_id"], "--runs-dir", str(rack[2]), "-e", "fixed=true",
                                    "--progress", "plain"])  # fmt: skip
    assert app.cmd_resume(args) == 0
    (again,) = [d for d in runs.listing(rack[2]) if d.get("resumed") == first["run_id"]]
    assert (again["limit"], again["stages"], again["stopped"]) == ("n2", ["os_baseline", "nvidia_driver"], {})
    assert again["tags"] == "os_baseline,nvidia_driver" and again["nodes"]["n2"]["os_baseline"]["state"] == "changed"
    assert again["nodes"]["n2"]["nvidia_driver"]["state"] == "ok"


def test_the_live_table_and_the_json(rack, capsys):
    out = io.StringIO()
    run(rack, ["--progress", "live"], out)
    table = out.getvalue()
    assert "\x1b[" in table and "OS baseline" in table and "NVIDIA driver" in table
    assert all(node in table for node in ("n1", "n2", "n3", "n4")) and "failed" in table and "unreachable" in table
    out = io.StringIO()
    document = run(rack, ["--json"], out)
    assert json.loads(out.getvalue()) == document
    # The progress went to stderr.
    assert "stage os_baseline: OS baseline" in capsys.readouterr().err
