"""A run against the one before it in the same results directory: the golden node documents of real captures as two
runs of a rack, a node that newly fails, one fixed, NCCL bus bandwidth down, firmware changed; and which run is the
previous one."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import (
    acceptance_history,
    acceptance_report,
    acceptance_results,
)

GOLDEN = Path(__file__).resolve().parent / "golden" / "acceptance"


def golden(name, node):
    return {**json.loads((GOLDEN / f"{name}.json").read_text()), "node": node, "rack": "rack_a"}


def with_nccl(document, busbw):
    """The document with its kept all_reduce_perf run judged PASS at busbw (the goldens have none)."""
    document = copy.deepcopy(document)
    for check in document["checks"]:
        if check["id"] == "nccl.single_node":
            check.update(status="PASS", value=busbw, reason=f"all_reduce_perf bus bandwidth {busbw:g} GB/s, gate 460")
    return document


def write(results, run_id, started, documents):
    run_dir = results / run_id
    entries = [acceptance_results.node_entry(acceptance_results.write_node(str(run_dir), d, {})) for d in documents]
    run = {"run_id": run_id, "started_at": started, "finished_at": started, "operator": "ops",
           "collection": {"name": "gpuops.bringup", "version": "0.1.0"}, "tools": {}}  # fmt: skip
    acceptance_results.write_run(str(run_dir), run, entries)
    return run_dir


@pytest.fixture
def two_runs(tmp_path):
    results = tmp_path / "reports"
    healthy = with_nccl(golden("h100-healthy", "c"), 476.53)
    write(results, "20261201T080000Z", "2026-12-01T08:00:00Z",
          [golden("h100-healthy", "a"), golden("h100-gpu-missing", "b"), healthy])  # fmt: skip
    slower = with_nccl(golden("h100-healthy", "c"), 450.0)
    slower["inventory"]["gpus"][3]["vbios"] = "96.00.99.00.01"
    documents = [golden("h100-gpu-missing", "a"), golden("h100-healthy", "b"), slower, golden("h100-ecc", "d")]
    later = write(results, "20261206T100000Z", "2026-12-06T10:00:00Z", documents)
    return results, later


def test_what_changed_on_each_node_both_runs_checked(two_runs):
    _results, run_dir = two_runs
    run, nodes = acceptance_report.load(str(run_dir))
    comparison = acceptance_report.comparison_of(str(run_dir), run, nodes)
    serial = golden("h100-healthy", "c")["inventory"]["gpus"][3]["serial"]
    assert comparison == {
        "previous": "20261201T080000Z", "started_at": "2026-12-01T08:00:00Z", "common": ["a", "b", "c"],
        "nodes": {
            "a": {"new_failures": ["gpu.count"], "verdict": ["accepted", "rejected"]},
            "b": {"fixed": ["gpu.count"], "verdict": ["rejected", "accepted"]},
            "c": {"nccl_busbw": {"before": 476.53, "now": 450.0, "change_pct": -5.6},
                  "firmware": [{"what": f"GPU 3 ({serial}) VBIOS", "before": "96.00.74.00.01",
                                "now": "96.00.99.00.01"}]},
        },
    }  # fmt: skip


def test_the_reports_say_what_changed_and_the_index_lists_the_runs(two_runs):
    results, run_dir = two_runs
    acceptance_report.write_reports(str(results / "20261201T080000Z"))
    acceptance_report.write_reports(str(run_dir))
    summary = (run_dir / "summary.md").read_text()
    assert "## Since run 20261201T080000Z\n\n- a: verdict ACCEPTED → REJECTED; newly failing: gpu.count\n" in summary
    assert "- c: NCCL bus bandwidth 476.53 → 450 GB/s (-5.6 %); GPU 3 (" in summary
    page = (run_dir / "report.html").read_text()
    assert 'Compared with run <a href="../20261201T080000Z/report.html">20261201T080000Z</a>' in page
    assert '<li data-node="b"><strong>b</strong>: verdict REJECTED → ACCEPTED; fixed: gpu.count</li>' in page
    first = (results / "20261201T080000Z" / "report.html").read_text()
    assert "No earlier run in this results directory checked these nodes." in first
    listing = (results / "index.html").read_text()
    assert listing.index('href="20261206T100000Z/report.html"') < listing.index('href="20261201T080000Z/report.html"')


@pytest.mark.parametrize(("now", "regressed"), [(452.71, False), (452.70, True), (476.53, False), (500.0, False)])
def test_a_regression_is_more_than_five_percent_down(now, regressed):
    """476.53 GB/s before, 5 % of it 23.83: 452.71 is just under 5 % down, 452.70 just over."""
    before = with_nccl(golden("h100-healthy", "c"), 476.53)
    changes = acceptance_history.node_changes(before, with_nccl(golden("h100-healthy", "c"), now))
    assert ("nccl_busbw" in changes) is regressed


def test_the_previous_run_is_the_last_earlier_one_of_the_same_nodes(tmp_path):
    results = tmp_path / "reports"
    write(results, "r1", "2026-12-01T08:00:00Z", [golden("h100-healthy", "a")])
    write(results, "r2", "2026-12-02T08:00:00Z", [golden("h100-healthy", "z")])  # other nodes
    now = write(results, "r3", "2026-12-03T08:00:00Z", [golden("h100-healthy", "a")])
    write(results, "r4", "2026-12-04T08:00:00Z", [golden("h100-healthy", "a")])  # later
    (results / "r5").mkdir()
    (results / "r5" / "run.json").write_text("{")
    (results / "not a run id").mkdir()
    run = json.loads((now / "run.json").read_text())
    assert acceptance_history.previous(str(now), run) == ("r1", str(results / "r1"))
    assert [r[0] for r in acceptance_history.runs(str(results))] == ["r1", "r2", "r3", "r4"]
    assert acceptance_history.runs(str(tmp_path / "missing")) == []


def test_firmware_of_adapters_and_bios_and_gpus_without_serial():
    """Every kind of firmware change: a GPU's VBIOS (named by index where it has no serial), an adapter's firmware,
    the BIOS; a new GPU or adapter (no earlier version) is no change; entries of another shape are left out."""
    before = golden("h100-healthy", "c")
    before["inventory"]["system"] = {"manufacturer": "Supermicro", "bios_version": "2.1.0"}
    now = copy.deepcopy(before)
    now["inventory"]["gpus"][0].update(serial=None, vbios="96.00.99.00.01")
    before["inventory"]["gpus"][0]["serial"] = None
    now["inventory"]["rdma_adapters"][1]["firmware"] = "28.43.1014"
    now["inventory"]["rdma_adapters"].append({"name": "mlx5_10", "firmware": "28.43.1014"})
    now["inventory"]["system"]["bios_version"] = "2.4.0"
    adapter = before["inventory"]["rdma_adapters"][1]
    moved = acceptance_history.node_changes(before, now)["firmware"]
    assert moved == sorted([
        {"what": "GPU 0 (no serial) VBIOS", "before": before["inventory"]["gpus"][0]["vbios"], "now": "96.00.99.00.01"},
        {"what": f"{adapter['name']} firmware", "before": adapter["firmware"], "now": "28.43.1014"},
        {"what": "BIOS", "before": before["inventory"]["system"]["bios_version"], "now": "2.4.0"},
    ], key=lambda m: m["what"])  # fmt: skip
    odd = {"inventory": {"gpus": ["GPU-1", {"index": 1}], "rdma_adapters": [7, {"name": "mlx5_0"}], "system": "x"}}
    assert acceptance_history._firmware(odd) == {}
    assert acceptance_history._firmware({"inventory": ["not", "a", "mapping"]}) == {}


def test_a_check_failing_in_both_runs_is_no_new_failure_and_warn_is_fixed():
    before = golden("h100-gpu-missing", "a")
    now = copy.deepcopy(before)
    assert acceptance_history.node_changes(before, now) == {}
    for check in now["checks"]:
        if check["id"] == "gpu.count":
            check["status"] = "WARN"
    assert acceptance_history.node_changes(before, now)["fixed"] == ["gpu.count"]


@pytest.mark.parametrize(("was", "now"), [(476.53, None), (None, 300.0), (0, 300.0), (476.53, "450")])
def test_no_regression_without_two_measurements(was, now):
    before = with_nccl(golden("h100-healthy", "c"), 1.0)
    after = with_nccl(golden("h100-healthy", "c"), 1.0)
    for document, value in ((before, was), (after, now)):
        next(c for c in document["checks"] if c["id"] == "nccl.single_node")["value"] = value
    assert "nccl_busbw" not in acceptance_history.node_changes(before, after)


def test_exactly_five_percent_down_is_no_regression():
    before = with_nccl(golden("h100-healthy", "c"), 400.0)
    assert "nccl_busbw" not in acceptance_history.node_changes(before, with_nccl(golden("h100-healthy", "c"), 380.0))
    changes = acceptance_history.node_changes(before, with_nccl(golden("h100-healthy", "c"), 379.9))
    assert changes["nccl_busbw"] == {"before": 400.0, "now": 379.9, "change_pct": -5.0}


def test_runs_are_ordered_by_their_start_not_their_names(tmp_path):
    """An unreadable run before the others hides none of them; a run without a start time is the oldest; and a run
    of its own without one has no earlier run."""
    results = tmp_path / "reports"
    (results / "a0").mkdir(parents=True)
    (results / "a0" / "run.json").write_text("[")
    write(results, "b1", "2026-12-03T08:00:00Z", [golden("h100-healthy", "n")])
    write(results, "c2", "2026-12-01T08:00:00Z", [golden("h100-healthy", "n")])
    unstarted = write(results, "d3", "", [golden("h100-healthy", "n")])
    assert [r[0] for r in acceptance_history.runs(str(results))] == ["d3", "c2", "b1"]
    latest = json.loads((results / "b1" / "run.json").read_text())
    assert acceptance_history.previous(str(results / "b1"), latest) == ("c2", str(results / "c2"))
    first = json.loads((results / "c2" / "run.json").read_text())
    assert acceptance_history.previous(str(results / "c2"), first) == ("d3", str(unstarted))
    assert acceptance_history.previous(str(unstarted), json.loads((unstarted / "run.json").read_text())) is None


def test_a_run_at_the_same_second_is_not_earlier_and_another_schema_is_no_run(tmp_path):
    results = tmp_path / "reports"
    write(results, "r1", "2026-12-01T08:00:00Z", [golden("h100-healthy", "n")])
    again = write(results, "r2", "2026-12-01T08:00:00Z", [golden("h100-healthy", "n")])
    assert acceptance_history.previous(str(again), json.loads((again / "run.json").read_text())) is None
    (results / "r0").mkdir()
    (results / "r0" / "run.json").write_text(json.dumps({"schema": "something/else", "started_at": "2026-11-01"}))
    assert [r[0] for r in acceptance_history.runs(str(results))] == ["r1", "r2"]


def test_a_small_figure_regresses_too():
    before = with_nccl(golden("h100-healthy", "c"), 0.5)
    assert acceptance_history.node_changes(before, with_nccl(golden("h100-healthy", "c"), 0.1))["nccl_busbw"] == {
        "before": 0.5, "now": 0.1, "change_pct": -80.0}  # fmt: skip
