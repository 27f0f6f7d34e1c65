"""The stages' old names keep working until gpuops.bringup 1.0.0, each saying it is deprecated: the playbooks at
their old paths (playbooks/baseline.yml, driver.yml, container_toolkit.yml), the old tags in site.yml, and the old
names of the nvidia_driver filters (meta/runtime.yml). Controller-side only: no node is contacted."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# old name: the stage's name (its role's, playbook's and tag's).
RENAMED = {"baseline": "os_baseline", "driver": "nvidia_driver", "container_toolkit": "nvidia_container_toolkit"}


def ansible(*argv: str, command: str = "ansible-playbook") -> str:
    proc = subprocess.run([command, *argv], cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return output


def listing(playbook: str, *argv: str) -> tuple[list[str], list[str]]:
    """The plays' names and the tasks (with their tags, sorted) ansible-playbook --list-tasks shows for a playbook."""
    lines = ansible("-i", "localhost,", "--list-tasks", *argv, playbook).splitlines()
    plays = [line.split(": ", 1)[1].split("\t")[0] for line in lines if line.strip().startswith("play #")]
    return plays, [line.strip() for line in lines if line.startswith("      ")]


@pytest.mark.parametrize(("old", "new"), RENAMED.items())
def test_an_old_playbook_path_says_so_and_runs_the_stage(old, new):
    old_plays, old_tasks = listing(f"playbooks/{old}.yml")
    new_plays, new_tasks = listing(f"playbooks/{new}.yml")
    # A first play with the notice, then the stage's playbook as it is.
    assert old_plays == [f"Deprecated playbook playbooks/{old}.yml", *new_plays] and len(new_plays) > 1
    assert old_tasks == [f"Say that playbooks/{old}.yml is deprecated\tTAGS: [always]", *new_tasks]
    # The notice alone (the stage's own tasks, every one tagged with the stage, left out).
    ran = ansible("-i", "localhost,", "-c", "local", "--tags", "always", "--skip-tags", f"{old},{new}",
                  f"playbooks/{old}.yml")  # fmt: skip
    notice = (
        f"DEPRECATED: playbooks/{old}.yml (gpuops.bringup.{old}) is now playbooks/{new}.yml (gpuops.bringup.{new}) "
        f"and the tag {old} is now {new}; the old names go in gpuops.bringup 1.0.0."
    )
    assert notice in " ".join(ran.split()) and "ok=1 " in ran, ran[-3000:]


@pytest.mark.parametrize(("old", "new"), RENAMED.items())
def test_an_old_tag_picks_the_same_tasks_of_site_yml(old, new):
    by_old, by_new = listing("playbooks/site.yml", "--tags", old), listing("playbooks/site.yml", "--tags", new)
    assert by_old == by_new
    assert any(task.startswith(f"gpuops.bringup.{new} : ") for task in by_new[1]), by_new


def test_an_old_filter_name_routes_to_the_new_filter_with_a_deprecation():
    template = "{{ {'535': {}} | gpuops.bringup.driver_table_packages }}"
    ran = ansible("-i", "localhost,", "localhost", "-c", "local", "-m", "ansible.builtin.debug", "-a",
                  json.dumps({"msg": template}), command="ansible")  # fmt: skip
    said = " ".join(ran.split())
    assert 'Filter "gpuops.bringup.driver_table_packages" has been deprecated. Use ' in said, ran
    assert "gpuops.bringup.nvidia_driver_table_packages" in said and "version 1.0.0" in said and "SUCCESS" in said
