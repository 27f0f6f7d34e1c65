"""Where the acceptance stage's results go and how they are written: modes from creation, the evidence's manifest,
a rerun added to its run, and both documents against their JSON schemas."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import jsonschema
import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import acceptance, acceptance_results, hardware_profiles

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures"
H100 = hardware_profiles.BUILTIN["hgx_h100_8gpu"]
SCHEMAS = {
    name: json.loads((ROOT / "schemas" / f"acceptance-{name}.schema.json").read_text()) for name in ("node", "run")
}


def read_result():
    """acceptance_read's result for a simulated H100 node, some items missing as on a container."""
    query = (FIXTURES / "nvidia_smi" / "h100-sxm-x8-565.derived.xml").read_text()
    return {
        "changed": False,
        "simulated": {"profile": "hgx_h100_8gpu", "captures": []},
        "evidence": {
            "nvidia-smi-query.xml": {
                "cmd": ["/usr/local/bin/nvidia-smi", "-q", "-x"],
                "rc": 0,
                "stdout": query,
                "stderr": "",
                "truncated": False,
            },
            "nvidia-smi-nvlink.txt": {
                "cmd": ["nvidia-smi", "nvlink", "-s"],
                "rc": 2,
                "stdout": "",
                "stderr": "no capture\n",
                "truncated": False,
            },
            "dkms-status.txt": {"tool": "dkms", "missing": True},
            "nccl-tests-results.json": {
                "path": "/var/lib/gpuops/nccl_tests/results.json",
                "rc": None,
                "stdout": None,
                "stderr": "",
                "missing": True,
            },
        },
    }


def document(node="n1", run_id="20261205T091500Z"):
    result = acceptance.node_results(node, H100, read_result()["evidence"], rack="rack_a",
                                     simulated=read_result()["simulated"], run_id=run_id)  # fmt: skip
    return {**result, "finished_at": "2026-12-05T09:15:07Z"}


RUN = {"run_id": "20261205T091500Z", "started_at": "2026-12-05T09:15:00Z", "finished_at": "2026-12-05T09:15:09Z",
       "operator": "ops", "collection": {"name": "gpuops.bringup", "version": "0.1.0"},
       "tools": {"ansible_core": "2.19.14"}}  # fmt: skip


def test_a_node_is_written_with_its_evidence_and_manifest(tmp_path):
    run_dir = tmp_path / "reports" / RUN["run_id"]
    written = acceptance_results.write_node(str(run_dir), document(), read_result())
    jsonschema.validate(written, SCHEMAS["node"])
    assert json.loads((run_dir / "nodes" / "n1.json").read_text()) == written
    evidence = run_dir / "evidence" / "n1"
    assert sorted(p.name for p in evidence.iterdir()) == [
        "SHA256SUMS", "nvidia-smi-nvlink.txt", "nvidia-smi-nvlink.txt.stderr", "nvidia-smi-query.xml"]  # fmt: skip
    query = (evidence / "nvidia-smi-query.xml").read_bytes()
    digest = hashlib.sha256(query).hexdigest()
    assert f"{digest}  nvidia-smi-query.xml\n" in (evidence / "SHA256SUMS").read_text()
    entries = {e["name"]: e for e in written["evidence"]}
    assert entries["nvidia-smi-query.xml"]["sha256"] == digest
    assert entries["nvidia-smi-query.xml"]["file"] == "evidence/n1/nvidia-smi-query.xml"
    assert entries["dkms-status.txt"] == {"name": "dkms-status.txt", "command": None, "rc": None, "missing": True,
                                          "skipped": None, "truncated": False, "source": None}  # fmt: skip
    assert "file" not in entries["nccl-tests-results.json"]
    for path in (tmp_path / "reports", run_dir, run_dir / "nodes", run_dir / "evidence", evidence):
        assert stat.S_IMODE(path.stat().st_mode) == 0o750, path
    for path in evidence.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o640, path


def test_a_rerun_of_a_subset_is_added_to_its_run(tmp_path):
    run_dir = str(tmp_path / RUN["run_id"])
    first = [acceptance_results.node_entry(acceptance_results.write_node(run_dir, document(n), read_result()))
             for n in ("n1", "n2")]  # fmt: skip
    acceptance_results.write_run(
        run_dir, RUN, [*first, acceptance_results.unreachable_entry("n3", "rack_a", "hgx_h100_8gpu", "down")]
    )
    again = {**RUN, "started_at": "2026-12-05T10:00:00Z", "finished_at": "2026-12-05T10:00:05Z"}
    later = acceptance_results.write_run(run_dir, again, [acceptance_results.node_entry(document("n3"))])
    jsonschema.validate(later, SCHEMAS["run"])
    assert [n["node"] for n in later["nodes"]] == ["n1", "n2", "n3"]
    # n3's unreachable entry is replaced by its results (its evidence lacks ibstat: rejected).
    assert later["nodes"][2]["verdict"] == "rejected" and "error" not in later["nodes"][2]
    assert later["started_at"] == RUN["started_at"] and later["finished_at"] == again["finished_at"]
    assert [a["nodes"] for a in later["attempts"]] == [["n1", "n2", "n3"], ["n3"]]
    assert later["totals"] == {"accepted": 0, "rejected": 3, "incomplete": 0, "nodes": 3}
    assert later["racks"] == {"rack_a": {"accepted": 0, "rejected": 3, "incomplete": 0}}
    assert later["simulated"] is True


def test_an_unreachable_node_is_incomplete_with_the_reason(tmp_path):
    entry = acceptance_results.unreachable_entry("n9", None, None, "the node was unreachable")
    written = acceptance_results.write_run(str(tmp_path / "r"), RUN, [entry])
    jsonschema.validate(written, SCHEMAS["run"])
    assert written["nodes"][0]["summary"] == "n9 (None): INCOMPLETE - the node was unreachable"


def test_the_default_results_directory_is_beside_the_inventory(tmp_path):
    assert acceptance_results.default_results_dir("/srv/site/inventory", "/x") == "/srv/site/reports"
    assert acceptance_results.default_results_dir(None, "/home/ops") == "/home/ops/reports"


def test_results_directory_problems(tmp_path, monkeypatch):
    assert acceptance_results.results_dir_problem(str(tmp_path / "new" / "deeper")) is None
    assert acceptance_results.results_dir_problem("reports").startswith(
        "acceptance_results_dir is 'reports': not an absolute path. Fix:"
    )
    installed = tmp_path / "collections" / "ansible_collections" / "gpuops" / "bringup" / "reports"
    assert "inside an installed collection" in acceptance_results.results_dir_problem(str(installed))
    (tmp_path / "file").write_text("")
    assert acceptance_results.results_dir_problem(str(tmp_path / "file" / "reports")) == (
        f"acceptance_results_dir is '{tmp_path}/file/reports', but {tmp_path}/file is a file. Fix: give a directory."
    )
    # Root may write anywhere; the check asks the kernel the way a user's run would.
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    problem = acceptance_results.results_dir_problem(str(tmp_path / "reports"))
    assert problem.startswith(f"acceptance_results_dir is '{tmp_path}/reports', but {tmp_path} is not writable for "
                              "user ")  # fmt: skip


@pytest.mark.parametrize(
    ("run_id", "bad"), [("", False), ("20261205T091500Z", False), ("../x", True), ("a" * 65, True)]
)
def test_run_ids(run_id, bad):
    assert (acceptance_results.run_id_problem(run_id) is not None) is bad


def test_a_new_run_id_never_reuses_a_directory(tmp_path):
    first = acceptance_results.new_run_id(str(tmp_path), now=1796461200)
    assert first == "20261205T090000Z"
    (tmp_path / first).mkdir()
    assert acceptance_results.new_run_id(str(tmp_path), now=1796461200) == "20261205T090000Z-2"


@pytest.mark.parametrize(("node", "bad"), [("gpu-node-01", False), ("n_1.rack", False), ("../etc", True),
                                           ("a/b", True), ("..", True), ("", True)])  # fmt: skip
def test_host_names_must_name_files(node, bad):
    assert (acceptance_results.node_name_problem(node) is not None) is bad


def test_the_run_id_and_host_name_messages_name_the_fix():
    assert acceptance_results.run_id_problem("../x") == (
        "acceptance_run_id is '../x': a run id is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or "
        'digit. Fix: give an existing run\'s directory name to add to it, or "" for a new run.'
    )
    assert acceptance_results.node_name_problem("a/b") == (
        "inventory host 'a/b' cannot name a results file (letters, digits, '.', '_' and '-' only). Fix: rename the "
        "host in the inventory (ansible_host keeps its address)."
    )


def test_a_nodes_rack_is_its_first_rack_group():
    assert acceptance_results.rack_of(["hgx_h100_8gpu", "rack_b02", "rack_a01"]) == "rack_a01"
    assert acceptance_results.rack_of(["hgx_h100_8gpu"]) is None
    assert acceptance_results.rack_of(None) is None


def test_evidence_entries_keep_what_each_read_said():
    """A command's output (undecodable bytes come back from Ansible as lone surrogates), a file's copy, a file that is
    not there, a read that did not apply; names that are no evidence file are left out."""
    evidence = {
        "nvidia-smi-topo.txt": {"cmd": ["nvidia-smi", "topo", "-m"], "rc": 0, "stdout": "GPU0 \udcff X\n",
                                "stderr": "warn \udcfe", "truncated": True},
        "dkms-status.txt": {"path": "/var/lib/dkms", "missing": True, "source": "sysfs"},
        "ibstat.txt": {"cmd": ["ibstat"], "rc": None, "skipped": "no RDMA adapter", "stdout": None, "stderr": ""},
        "not-evidence.txt": {"cmd": ["true"], "stdout": "x"},
    }  # fmt: skip
    files, entries = acceptance_results.evidence_entries(evidence)
    assert files == {"nvidia-smi-topo.txt": b"GPU0 ? X\n", "nvidia-smi-topo.txt.stderr": b"warn ?"}
    assert {e["name"]: e for e in entries} == {
        "nvidia-smi-topo.txt": {"name": "nvidia-smi-topo.txt", "command": ["nvidia-smi", "topo", "-m"], "rc": 0,
                                "missing": False, "skipped": None, "truncated": True, "source": None,
                                "file": "nvidia-smi-topo.txt", "stderr_file": "nvidia-smi-topo.txt.stderr"},
        "dkms-status.txt": {"name": "dkms-status.txt", "command": "/var/lib/dkms", "rc": None, "missing": True,
                            "skipped": None, "truncated": False, "source": "sysfs"},
        "ibstat.txt": {"name": "ibstat.txt", "command": ["ibstat"], "rc": None, "missing": False,
                       "skipped": "no RDMA adapter", "truncated": False, "source": None},
    }  # fmt: skip


def test_documents_are_indented_json_in_their_own_order_with_their_own_characters(tmp_path):
    run_dir = tmp_path / "r"
    doc = {**document(), "summary": "n1 (hgx_h100_8gpu): REJECTED, Grüße"}
    acceptance_results.write_node(str(run_dir), doc, {})
    text = (run_dir / "nodes" / "n1.json").read_text(encoding="utf-8")
    assert text == json.dumps({**doc, "evidence": []}, indent=2, ensure_ascii=False) + "\n"
    assert "Grüße" in text and text.startswith('{\n  "schema"')
    # A text with a lone surrogate is written with it replaced, as UTF-8; nothing else is left in the directory.
    acceptance_results.write_file(str(tmp_path / "t" / "a.txt"), "a \udcff")
    assert [p.name for p in (tmp_path / "t").iterdir()] == ["a.txt"]
    assert (tmp_path / "t" / "a.txt").read_bytes() == b"a ?"


def test_the_run_entries_of_a_node_and_of_an_unreachable_one(tmp_path):
    entry = acceptance_results.node_entry(document())
    assert (entry["results"], entry["finished_at"], entry["simulated"]) == (
        "nodes/n1.json", "2026-12-05T09:15:07Z", True)  # fmt: skip
    down = acceptance_results.unreachable_entry("n9", "rack_a", "hgx_h100_8gpu", "unreachable")
    assert (down["accepted"], down["simulated"], down["results"], down["verdict"]) == (False, False, None, "incomplete")
    assert down["counts"] == {"PASS": 0, "WARN": 0, "FAIL": 0, "ERROR": 0, "SKIPPED": 0}
    acceptance_results.write_run(str(tmp_path / "r"), RUN, [entry, down])
    assert [n["node"] for n in json.loads((tmp_path / "r" / "run.json").read_text())["nodes"]] == ["n1", "n9"]
