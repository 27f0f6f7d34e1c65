"""The gpuops command's stage selection, runs directory and resume plan."""

from __future__ import annotations

import json
import stat
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cli"))

from gpuops import app, runs, stages
from gpuops.progress import Progress, _reason


def test_stages_in_site_order_and_unknown_ones_named():
    assert stages.selected(["acceptance", "os_baseline"]) == ["os_baseline", "acceptance"]
    assert stages.selected([]) == list(stages.TAGS)
    with pytest.raises(stages.StageError, match="unknown stage 'bios': the stages are os_baseline, nvidia_driver"):
        stages.selected(["os_baseline", "bios"])
    among = ["os_baseline", "rdma_fabric", "acceptance"]
    assert stages.from_stage("rdma_fabric", among) == ["rdma_fabric", "acceptance"]
    assert stages.from_stage("nvidia_driver", ["os_baseline", "acceptance"]) == ["os_baseline", "acceptance"]


def stub_execute(monkeypatch):
    """app.execute replaced: what each command would run, (playbook, stages, limit, resumed run), with rc 0."""
    ran = []

    def execute(args, playbook, inventory, selection, limit=None, resumed=None, out=None):
        ran.append((playbook, selection, limit, resumed))
        return {"rc": 0}

    monkeypatch.setattr(app, "execute", execute)
    return ran


def test_a_stage_is_named_as_its_role_and_playbook():
    """One name per stage: its tag in site.yml, its playbook (playbooks/<name>.yml) and its role."""
    root = Path(__file__).resolve().parents[2]
    for tag in stages.TAGS:
        assert (root / "playbooks" / f"{tag}.yml").is_file(), tag
        assert (root / "roles" / tag).is_dir(), tag


def test_the_old_stage_names_are_taken_as_the_new_ones():
    chosen = stages.selected(["acceptance", "driver", "baseline", "os_baseline"])
    assert chosen == ["os_baseline", "nvidia_driver", "acceptance"]
    assert stages.from_stage("driver", ["baseline", "driver", "acceptance"]) == ["nvidia_driver", "acceptance"]
    assert stages.deprecations(["driver", "cuda_toolkit", "driver", "baseline"]) == [
        "stage 'driver' is deprecated: its name is now 'nvidia_driver' (the old name goes in gpuops.bringup 1.0.0)",
        "stage 'baseline' is deprecated: its name is now 'os_baseline' (the old name goes in gpuops.bringup 1.0.0)",
    ]
    assert stages.deprecations(None) == stages.deprecations(list(stages.TAGS)) == []


def test_an_old_stage_name_runs_its_stage_with_a_notice_on_stderr(monkeypatch, capsys):
    ran = stub_execute(monkeypatch)
    assert app.main(["up", "-i", "hosts.yml", "--stage", "driver", "--stage", "acceptance"]) == 0
    assert ran == [("gpuops.bringup.site", ["nvidia_driver", "acceptance"], None, None)]
    out, err = capsys.readouterr()
    assert err == ("gpuops: stage 'driver' is deprecated: its name is now 'nvidia_driver' (the old name goes in "
                   "gpuops.bringup 1.0.0)\n") and out == ""  # fmt: skip
    # The stages' names: no notice.
    assert app.main(["up", "-i", "hosts.yml", "--stage", "nvidia_driver"]) == 0
    assert ran[-1][1] == ["nvidia_driver"] and capsys.readouterr().err == ""


def test_run_ids_are_private_and_never_reused(tmp_path):
    at = datetime(2026, 12, 6, 10, 15, tzinfo=UTC)
    first, second = runs.new(tmp_path / "runs", at), runs.new(tmp_path / "runs", at)
    assert (first[0], second[0]) == ("20261206T101500Z", "20261206T101500Z-1")
    assert stat.S_IMODE(first[1].stat().st_mode) == 0o700
    runs.save(first[1], {"run_id": first[0]})
    assert stat.S_IMODE((first[1] / runs.RUN_FILE).stat().st_mode) == 0o600
    assert runs.load(tmp_path / "runs", first[0]) == {"run_id": first[0]}
    assert [d["run_id"] for d in runs.listing(tmp_path / "runs")] == [first[0]]


@pytest.mark.parametrize(("run_id", "content", "message"), [
    ("../etc", None, "'../etc' is no run id"), ("20261206T101500Z", None, "cannot read"),
    ("20261206T101500Z", "[", "cannot read"), ("20261206T101500Z", "[]", "holds no run")])  # fmt: skip
def test_a_run_that_cannot_be_read_is_named(tmp_path, run_id, content, message):
    if content is not None:
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / runs.RUN_FILE).write_text(content)
    with pytest.raises(runs.RunError, match=message):
        runs.load(tmp_path, run_id)


def test_resume_from_the_earliest_unfinished_stage_to_the_last_asked():
    document = {"run_id": "r", "stages": ["os_baseline", "nvidia_driver", "rdma_fabric", "acceptance"],
                "unfinished": {"n3": "rdma_fabric", "n1": "nvidia_driver", "n9": "not a stage"}}  # fmt: skip
    assert runs.resume_plan(document) == (["n1", "n3", "n9"], ["nvidia_driver", "rdma_fabric", "acceptance"])
    assert runs.resume_plan({**document, "unfinished": {"n9": "?"}}) == (["n9"], document["stages"])
    with pytest.raises(runs.RunError, match="every node finished; nothing to resume"):
        runs.resume_plan({**document, "unfinished": {}})


def test_a_run_recorded_with_the_old_stage_names_lists_and_resumes(tmp_path, monkeypatch, capsys):
    """A run of gpuops before the stages were renamed recorded baseline and driver: it is listed as it was, and its
    resume runs the new names' stages (the playbooks' tags)."""
    document = {"run_id": "20261206T101500Z", "command": "up", "playbook": "gpuops.bringup.site",
                "inventory": ["hosts.yml"], "stages": ["baseline", "driver", "acceptance"], "options": [], "rc": 2,
                "stopped": {"n1": {"stage": "driver", "state": "failed", "task": "t", "reason": "r"}},
                "unfinished": {"n1": "driver", "n2": "baseline"}}  # fmt: skip
    (tmp_path / document["run_id"]).mkdir()
    runs.save(tmp_path / document["run_id"], document)
    assert runs.resume_plan(document) == (["n1", "n2"], ["os_baseline", "nvidia_driver", "acceptance"])
    assert app.main(["runs", "--runs-dir", str(tmp_path)]) == 0
    assert "stopped: n1 (driver)" in capsys.readouterr().out
    ran = stub_execute(monkeypatch)
    assert app.main(["resume", document["run_id"], "--runs-dir", str(tmp_path)]) == 0
    assert ran == [("gpuops.bringup.site", ["os_baseline", "nvidia_driver", "acceptance"], "n1,n2", document["run_id"])]
    assert stages.tags(ran[0][1]) == "os_baseline,nvidia_driver,acceptance"


def test_resume_takes_the_earlier_runs_options_again():
    found = app._options(["-e", "a=1", "--check", "--vault-id", "prod@file", "-e", "b=2", "--diff"])
    assert found == {"-e": ["a=1", "b=2"], "--vault-id": ["prod@file"], "--vault-password-file": [], "--check": [True],
                     "--diff": [True]}  # fmt: skip


@pytest.mark.parametrize(("res", "reason"), [
    ({"msg": "non-zero return code", "stderr": "W: Failed to fetch x\n\nE: Some index files failed"},
     "non-zero return code: W: Failed to fetch x E: Some index files failed"),
    ({"msg": "boom\n  twice"}, "boom twice"), ({"stderr": "a\nb\nc\nd"}, "b c d"),
    ({"rc": 3}, "the task failed (rc 3)"),
    ({}, "the task failed"), ("not a mapping", "the task failed"), ({"msg": "x" * 500}, "x" * 399 + "…")])  # fmt: skip
def test_why_a_task_failed_is_one_line(res, reason):
    assert _reason(res) == reason


def test_nothing_stopped_means_nothing_unfinished():
    progress = Progress(["os_baseline"])
    for event in ({"event": "playbook_on_play_start", "event_data": {"name": "Stage 1: OS baseline"}},
                  {"event": "runner_on_start", "event_data": {"host": "n1", "task": "t"}},
                  {"event": "runner_on_ok", "event_data": {"host": "n1", "task": "t", "res": {"changed": False}}},
                  {"event": "playbook_on_stats", "event_data": {"processed": {"n1": 1, "n2": 1}}}):  # fmt: skip
        progress.feed(event, 1.0)
    assert progress.unfinished() == {} and progress.states(2.0) == {"n1": {"os_baseline": {
        "state": "ok", "changed": 0, "elapsed_s": 0.0}}}  # fmt: skip
    assert json.dumps(progress.stopped()) == "{}"
