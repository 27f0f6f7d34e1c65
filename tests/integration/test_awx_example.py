"""The AWX example (examples/awx/job_templates.yml): a playbook the awx.awx collection accepts, whose sliced template
leaves out exactly the stages that need every node of the run in one play, which the unsliced template runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "awx" / "job_templates.yml"
# Stages with steps across nodes: NCCL groups and pairs, the bandwidth pairs, one run's results and reports.
WHOLE_RUN = {"nccl_tests", "acceptance"}


def templates():
    tasks = yaml.safe_load(EXAMPLE.read_text())[0]["tasks"]
    return {t["awx.awx.job_template"]["name"]: t["awx.awx.job_template"] for t in tasks if "awx.awx.job_template" in t}


def test_the_example_passes_the_syntax_check():
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "--syntax-check", str(EXAMPLE)], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_only_stages_of_single_nodes_are_sliced():
    found = templates()
    sliced, whole = found["gpuops bring-up"], found["gpuops acceptance"]
    assert set(sliced["skip_tags"].split(",")) == WHOLE_RUN == set(whole["job_tags"].split(","))
    assert whole["job_slice_count"] == 1 and sliced["job_slice_count"] != 1
    assert sliced["playbook"] == whole["playbook"] == "playbooks/site.yml"
    # The tags are site.yml's stages: every play of playbooks/nccl_tests.yml and acceptance.yml carries its stage's.
    for stage in WHOLE_RUN:
        plays = yaml.safe_load((ROOT / "playbooks" / f"{stage}.yml").read_text())
        assert all(stage in play.get("tags", []) or "import_playbook" in str(play) for play in plays), stage
    # The results outlive the job's container.
    assert whole["extra_vars"]["acceptance_results_dir"].startswith("/")
