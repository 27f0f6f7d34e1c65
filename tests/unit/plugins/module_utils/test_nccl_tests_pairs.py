"""all_reduce_perf between pairs of nodes: the plan of each pass, the record of a round from the launcher's results,
a kept record standing or not, and the fault put on the node it belongs to. Measurements are real two-node H100 runs
(tests/fixtures/nccl, sources in tests/fixtures/SOURCES.md) parsed by the nccl_test module's parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import nccl_tests, nccl_tests_pairs, nccl_tests_plan

NCCL = Path(__file__).resolve().parents[3] / "fixtures" / "nccl"
# 2 nodes x 8 H100 (NVIDIA/nccl-tests#290): a clean run, whose largest busbw (155.57 GB/s) is below the H100 pair
# gate; the tests below vary only that figure (at()).
CAPTURE = nccl_tests.parse((NCCL / "nccl-tests-290-all_reduce-h100-2node-srun-label.txt").read_text())
# 2 nodes x 8 H100 whose job aborted with an NCCL WARN (NVIDIA/nccl-tests#294).
ABORTED = nccl_tests.parse((NCCL / "nccl-tests-294-all_reduce-h100-2node-nccl-warn-abort.txt").read_text())
BUSBW = CAPTURE["largest_busbw_gbps"]


def members(*names, rack="rack_a", gate=None, gpus=8, profile="hgx_h100_8gpu"):
    return [nccl_tests_pairs.member(n, rack, f"{n}.example", gpus, gate, profile) for n in names]


def result(parsed, rc=0):
    """A nccl_test result as async_status returns it for one pair (its start's loop item is the pair)."""
    return {**parsed, "rc": rc, "finished": 1, "changed": False}


def measured(parsed, rc=0):
    return nccl_tests_plan.measurement(result(parsed, rc), "2026-12-05T20:00:00Z")


def at(busbw):
    return {**CAPTURE, "largest_busbw_gbps": busbw}


GOOD = at(400.0)


def entry(a, b, parsed=None, rc=0, number=1):
    """A pair's entry; by default a clean run at 400 GB/s (GOOD)."""
    return {"pass": number, "nodes": [a, b], "measurement": measured(GOOD if parsed is None else parsed, rc)}


def test_the_captures_judged_as_pairs():
    assert BUSBW == 155.57
    assert nccl_tests_plan.judge(measured(CAPTURE), None)[0] is True
    nodes = members("n1", "n2", gate=365)
    assert nccl_tests_pairs.tests(nodes, [entry("n1", "n2", CAPTURE)]) == [("n1", "n2", False)]
    assert nccl_tests_plan.judge(measured(ABORTED, 1), None)[0] is False


def test_the_first_pass_pairs_neighbours_in_rounds_with_mpirun_hosts():
    nodes = members("n1", "n2", "n3")
    plan = nccl_tests_pairs.plan(nodes, [], 1, "/etc/gpuops/nccl_tests/pairs")
    assert plan["pairs"] == [["n1", "n2"], ["n3", "n1"]]
    # n1 is in both pairs: two rounds.
    assert plan["rounds"] == [
        [{"nodes": ["n1", "n2"], "np": 16, "npernode": 8, "hosts": "n1.example:8,n2.example:8",
          "ssh_config": "/etc/gpuops/nccl_tests/pairs/ssh_config"}],
        [{"nodes": ["n3", "n1"], "np": 16, "npernode": 8, "hosts": "n3.example:8,n1.example:8",
          "ssh_config": "/etc/gpuops/nccl_tests/pairs/ssh_config"}],
    ]  # fmt: skip


def test_nodes_pair_with_their_own_profile_only():
    """A rack of H100 and L40S nodes (as inventory/example.yml's): each profile's nodes pair among themselves, in
    rounds together; a later pass isolates within the profile."""
    nodes = members("h1", "h2", "h3") + members("l1", "l2", gpus=4, profile="pcie_l40s_4gpu")
    plan = nccl_tests_pairs.plan(nodes, [], 1, "/d")
    assert plan["pairs"] == [["h1", "h2"], ["h3", "h1"], ["l1", "l2"]]
    first = [p for r in plan["rounds"] for p in r if p["nodes"] == ["l1", "l2"]]
    assert [(p["np"], p["npernode"], p["hosts"]) for p in first] == [(8, 4, "l1.example:4,l2.example:4")]
    entries = [entry("h1", "h2", at(1.0)), entry("h3", "h1", at(1.0)), entry("l1", "l2")]
    nodes = [{**m, "gate_gbps": 100} for m in nodes]
    # No H100 passed: the unresolved H100s pair among themselves, never with the good L40S nodes.
    assert nccl_tests_pairs.plan(nodes, entries, 2, "/d")["pairs"] == [["h2", "h3"]]


def test_pairs_of_one_round_run_at_once():
    plan = nccl_tests_pairs.plan(members("n1", "n2", "n3", "n4"), [], 1, "/d")
    assert [[p["nodes"] for p in r] for r in plan["rounds"]] == [[["n1", "n2"], ["n3", "n4"]]]


def test_a_failed_pair_is_isolated_in_the_second_pass():
    nodes = members("n1", "n2", "n3", "n4", gate=365)
    first = [entry("n1", "n2"), entry("n3", "n4", at(100.0))]
    plan = nccl_tests_pairs.plan(nodes, first, 2, "/d")
    # n3 and n4 each with a node that passed, spread over them.
    assert plan["pairs"] == [["n3", "n1"], ["n4", "n2"]]
    second = [*first, entry("n3", "n1", number=2), entry("n4", "n2", at(100.0), number=2)]
    outcomes = {n: nccl_tests_pairs.node_outcome(n, nodes, second)["outcome"] for n in ("n1", "n2", "n3", "n4")}
    # n2 and n3 failed only with n4, which passed nothing: the fault is n4's alone.
    assert outcomes == {"n1": "PASS", "n2": "PASS", "n3": "PASS", "n4": "FAIL"}
    assert nccl_tests_pairs.node_outcome("n4", nodes, second)["failed_with"] == ["n3", "n2"]
    assert nccl_tests_pairs.plan(nodes, second, 3, "/d")["pairs"] == []


@pytest.mark.parametrize(
    ("busbw", "passed"),
    [(364.99, False), (365.0, True), (365.01, True)],
)
def test_the_pair_gate_boundary(busbw, passed):
    nodes = members("n1", "n2", gate=365)
    assert nccl_tests_pairs.tests(nodes, [entry("n1", "n2", at(busbw))]) == [("n1", "n2", passed)]


def test_the_lower_gate_of_the_two_nodes_judges_their_pair():
    nodes = members("a", gate=400) + members("b", gate=300)
    assert nccl_tests_pairs.gate_of(nodes, "a", "b") == 300
    assert nccl_tests_pairs.tests(nodes, [entry("a", "b", at(350.0))]) == [("a", "b", True)]
    ungated = members("c") + members("d")
    assert nccl_tests_pairs.gate_of(ungated, "c", "d") is None
    assert nccl_tests_pairs.gate_of(members("e") + members("f", gate=10), "e", "f") == 10


def test_an_aborted_run_fails_its_pair_and_a_missing_result_judges_nobody():
    nodes = members("n1", "n2", "n3", "n4")
    entries = [entry("n1", "n2", ABORTED, rc=1), {"pass": 1, "nodes": ["n3", "n4"], "measurement": None, "why": "x"}]
    assert nccl_tests_pairs.tests(nodes, entries) == [("n1", "n2", False), ("n3", "n4", None)]
    assert nccl_tests_pairs.node_outcome("n3", nodes, entries)["outcome"] == "ERROR"
    assert nccl_tests_pairs.node_outcome("n1", nodes, entries)["outcome"] == "FAIL"
    assert nccl_tests_pairs.node_outcome("n1", nodes, entries)["failed_with"] == []
    assert nccl_tests_pairs.node_outcome("stranger", nodes, entries) is None


def test_acceptance_judges_at_its_own_gate():
    nodes = members("n1", "n2", gate=365)
    entries = [entry("n1", "n2", at(370.0))]
    assert nccl_tests_pairs.node_outcome("n1", nodes, entries)["outcome"] == "PASS"
    assert nccl_tests_pairs.node_outcome("n1", nodes, entries, gate=400)["outcome"] == "FAIL"
    runs = nccl_tests_pairs.node_outcome("n2", nodes, entries, gate=400)["runs"]
    assert runs[0]["partner"] == "n1" and runs[0]["busbw_gbps"] == 370.0 and runs[0]["pass"] == 1


def test_entries_of_a_round_from_the_launcher_results():
    pairs = [{"nodes": ["a", "b"]}, {"nodes": ["c", "d"]}, {"nodes": ["e", "f"]}, {"nodes": ["g", "h"]}]
    waited = [
        {**result(GOOD), "__nccl_tests_started": {"__nccl_tests_pair": pairs[0], "ansible_job_id": "1"}},
        # The module refused to run (no rc): no measurement.
        {"failed": False, "msg": "binary missing", "finished": 1,
         "__nccl_tests_started": {"__nccl_tests_pair": pairs[1]}},
        # The wait ran out before the job finished.
        {"finished": 0, "__nccl_tests_started": {"__nccl_tests_pair": pairs[2]}},
        "not a result",
    ]  # fmt: skip
    entries = nccl_tests_pairs.entries_of(pairs, waited, 2, "2026-12-05T20:00:00Z")
    assert [e["nodes"] for e in entries] == [["a", "b"], ["c", "d"], ["e", "f"], ["g", "h"]]
    assert entries[0]["pass"] == 2 and entries[0]["measurement"]["largest_busbw_gbps"] == 400.0
    assert entries[0]["measurement"]["measured_at"] == "2026-12-05T20:00:00Z"
    assert entries[1]["measurement"] is None and "binary missing" in entries[1]["why"]
    assert entries[2]["measurement"] is None and entries[2]["why"] == "the launcher gave no result for this pair"
    assert entries[3]["measurement"] is None


def record(members, wanted, entries):
    """What a pair node keeps under pairs/all_reduce_perf (roles/nccl_tests/vars/main.yml, __nccl_tests_pair_record)."""
    return {"inputs": wanted, "measurement": {"members": members, "entries": entries}}


def test_a_kept_record_stands_only_when_every_member_keeps_it_for_the_same_inputs():
    nodes = members("n1", "n2")
    wanted = nccl_tests_pairs.inputs(nodes, ["-b", "16G", "-g", "1"], {"NCCL_IB_HCA": "mlx5_0"}, {"nccl": "2.22.3"})
    entries = [entry("n1", "n2")]
    kept = record(nodes, wanted, entries)
    stored = {"n1": {nccl_tests_pairs.KEY: kept}, "n2": {nccl_tests_pairs.KEY: kept}}
    assert nccl_tests_pairs.kept(stored, wanted, False) == entries
    assert nccl_tests_pairs.kept(stored, wanted, True) is None
    assert nccl_tests_pairs.kept({"n1": stored["n1"]}, wanted, False) is None
    other = nccl_tests_pairs.inputs(members("n1", "n2", gate=365), wanted["args"], wanted["env"], wanted["versions"])
    assert nccl_tests_pairs.kept(stored, other, False) is None
    differing = {**stored, "n2": {nccl_tests_pairs.KEY: record(nodes, wanted, [])}}
    assert nccl_tests_pairs.kept(differing, wanted, False) is None
    broken = {**stored, "n2": {nccl_tests_pairs.KEY: {"inputs": wanted, "measurement": "nonsense"}}}
    assert nccl_tests_pairs.kept(broken, wanted, False) is None
    assert nccl_tests_pairs.kept({}, nccl_tests_pairs.inputs([], [], {}, {}), False) is None


@pytest.mark.parametrize(
    ("node", "outcome", "failed", "words"),
    [
        ("n1", "PASS", False, "passed with n2, n3"),
        ("n2", "PASS", False, "passed with n1"),
        ("n3", "FAIL", True, "failed with n1, which passed with others: the fault is this node's"),
    ],
)
def test_the_report_says_whose_fault_it_is(node, outcome, failed, words):
    nodes = members("n1", "n2", "n3", gate=365)
    entries = [entry("n1", "n2"), entry("n3", "n1", at(100.0))]
    found = nccl_tests_pairs.report(node, nodes, entries)
    assert found["outcome"] == outcome
    assert words in found["summary"]
    assert (found["failed"] is not None) == failed


def test_the_report_of_an_unisolated_failure_and_of_a_stranger():
    nodes = members("n1", "n2", gate=365)
    found = nccl_tests_pairs.report("n1", nodes, [entry("n1", "n2", at(100.0))])
    assert found["outcome"] == "FAIL" and "not isolated" in found["failed"] and "below" in found["failed"]
    warned = nccl_tests_pairs.report(
        "n2", members("n1", "n2", "n3", "n4", gate=365),
        [entry("n1", "n2"), entry("n3", "n4"), entry("n2", "n3", at(1.0))],
    )  # fmt: skip
    assert warned["outcome"] == "WARN" and warned["failed"] is None and "n3" in warned["summary"]
    errored = nccl_tests_pairs.report("n1", nodes, [{"pass": 1, "nodes": ["n1", "n2"], "measurement": None}])
    assert errored["outcome"] == "ERROR" and errored["failed"] is None
    assert nccl_tests_pairs.report("n9", nodes, []) is None
