"""The nccl_tests role's decisions: NCCL environment from the fabric, run planning, judging real captured runs
(tests/fixtures/nccl, sources in tests/fixtures/SOURCES.md) and the reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import nccl_tests, nccl_tests_plan

NCCL = Path(__file__).resolve().parents[3] / "fixtures" / "nccl"
H100 = {"profile": "hgx_h100_8gpu", "gpu": {"count": 8}, "infiniband": {"ports": 8, "link_layer": "InfiniBand"}}
PUBLISHED = {"hgx_h100_8gpu": 460, "hgx_h200_8gpu": 431, "hgx_a100_8gpu": 228}
VALID = {"source_url": "https://example/x.tar.gz", "source_checksum": "sha256:" + "a" * 64, "gates": {},
         "benchmarks": ["all_reduce_perf"], "gpudirect_rdma": "auto", "args": [], "multinode_group": ""}  # fmt: skip


def measured(name, rc=0):
    """A nccl_test result (its measured part) from a real capture."""
    return nccl_tests_plan.measurement({**nccl_tests.parse((NCCL / name).read_text()), "rc": rc}, "2026-11-30T00:00Z")


def problems(**changes):
    groups = {"pair": ["a", "b"], "lonely": ["a"]}
    return nccl_tests_plan.input_problems({**VALID, **changes}, H100, PUBLISHED, ["pcie_l40s_4gpu"], groups,
                                          ["a", "b"], "a")  # fmt: skip


def test_valid_variables_have_no_problem():
    assert problems() == []
    assert problems(gates={"pcie_l40s_4gpu": 50, "hgx_h100_8gpu": 470}, multinode_group="pair") == []
    # NVIDIA's build names its CUDA release; Debian's versions name none; empty is the source's default.
    assert problems(nccl_source="cuda_repo", nccl_version="2.21.5-1+cuda12.4") == []
    assert problems(nccl_source="cuda_repo", nccl_version="") == []
    assert problems(nccl_source="distribution", nccl_version="2.22.3-1-1") == []
    # A full commit pins a git source: no checksum is asked for.
    commit = "c8f02eeedd904748f0d8921225904dffc7f54a75"
    assert (
        problems(source_url="https://github.com/NVIDIA/nccl-tests.git", source_commit=commit, source_checksum="") == []
    )


@pytest.mark.parametrize(
    ("changes", "start"),
    [
        ({"gates": {"hgx_b300_8gpu": 900}}, "nccl_tests_gates names profile 'hgx_b300_8gpu', which is no hardware"),
        ({"gates": {"hgx_h100_8gpu": "fast"}}, "nccl_tests_gates.hgx_h100_8gpu is 'fast', not a bus bandwidth"),
        ({"multinode_group": "lonely"}, "nccl_tests_multinode_group 'lonely' has 1 host (a): a multi-node run needs"),
        ({"source_checksum": "md5:abc"}, "nccl_tests_source_checksum is 'md5:abc': the nccl-tests source"),
        (
            {"source_url": "https://github.com/NVIDIA/nccl-tests.git", "source_commit": "v2.16.3"},
            "nccl_tests_source_commit is 'v2.16.3', which is no full commit: a tag or branch can move",
        ),
        (
            {"source_commit": "C8F02EEEDD904748F0D8921225904DFFC7F54A75"},
            "nccl_tests_source_commit is 'C8F02EEEDD904748F0D8921225904DFFC7F54A75', which is no full commit",
        ),
        (
            {"nccl_source": "cuda_repo", "nccl_version": "2.23.4-1"},
            "nccl_tests_nccl_version is '2.23.4-1', which names no CUDA build",
        ),
        (
            {"nccl_source": "cuda_repo", "nccl_version": "2.23.4-1+cuda12"},
            "nccl_tests_nccl_version is '2.23.4-1+cuda12', which names no CUDA build",
        ),
    ],
)
def test_each_problem_names_the_variable_and_the_fix(changes, start):
    (problem,) = problems(**changes)
    assert problem.startswith(start) and "Fix: " in problem


def test_a_group_named_as_the_pairs_is_refused_only_beside_them():
    groups = {"pairs": ["a", "b"]}
    args = (H100, PUBLISHED, [], groups, ["a", "b"], "a")
    assert nccl_tests_plan.input_problems({**VALID, "multinode_group": "pairs"}, *args) == []
    assert nccl_tests_plan.input_problems({**VALID, "multinode_group": "pair", "pairs": True}, H100, PUBLISHED, [],
                                          {"pair": ["a", "b"]}, ["a", "b"], "a") == []  # fmt: skip
    (problem,) = nccl_tests_plan.input_problems({**VALID, "multinode_group": "pairs", "pairs": True}, *args)
    assert problem.startswith("nccl_tests_multinode_group is 'pairs', the name nccl_tests_pairs keeps its SSH key")


def test_a_group_cut_by_the_play_is_refused():
    (problem,) = nccl_tests_plan.input_problems({**VALID, "multinode_group": "pair"}, H100, PUBLISHED, [],
                                                {"pair": ["a", "b"]}, ["a"], "a")  # fmt: skip
    assert "has hosts outside this play (b)" in problem


def test_the_fabric_state_gives_the_nccl_environment():
    # Synthetic state in the rdma_fabric role's contract (/var/lib/gpuops/rdma_fabric/state.json): a RoCE fabric.
    peermem = {"enabled": True, "module": "nvidia-peermem", "status": "ready"}
    state = {"stack": "inbox", "peermem": peermem, "hcas": ["mlx5_0", "mlx5_1"], "link_layer": "Ethernet",
             "gid_index": 3, "socket_ifname": "bond0"}  # fmt: skip
    fabric = nccl_tests_plan.fabric_env(state, None, H100, {"NCCL_SOCKET_IFNAME": "eth1"})
    assert fabric == {
        "env": {"NCCL_DEBUG": "INFO", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "=mlx5_0,mlx5_1",
                "NCCL_SOCKET_IFNAME": "eth1"},
        "source": "/var/lib/gpuops/rdma_fabric/state.json",
        "overridden": ["NCCL_SOCKET_IFNAME"],
        "gpudirect_rdma_expected": True,
    }  # fmt: skip


def test_without_a_fabric_state_the_active_ports_of_the_profiles_link_layer_give_the_hcas():
    # Synthetic ib_facts: one InfiniBand port active, one down, one Ethernet port active.
    infiniband = {"devices": [
        {"name": "mlx5_0", "ports": [{"state": "active", "link_layer": "InfiniBand"}]},
        {"name": "mlx5_1", "ports": [{"state": "down", "link_layer": "InfiniBand"}]},
        {"name": "mlx5_2", "ports": [{"state": "active", "link_layer": "Ethernet"}]},
    ]}  # fmt: skip
    fabric = nccl_tests_plan.fabric_env(None, infiniband, H100, {})
    assert (fabric["env"], fabric["source"]) == ({"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "=mlx5_0"}, "ib_facts")
    assert fabric["gpudirect_rdma_expected"] is None
    assert nccl_tests_plan.fabric_env(None, None, H100, {})["source"] == "none"


def test_a_kept_measurement_with_the_same_inputs_is_not_run_again():
    inputs = {"args": ["-g", "8"], "env": {}, "mpirun": None, "versions": {}}
    kept = {"node/all_reduce_perf": {"inputs": {**inputs, "benchmark": "all_reduce_perf"}, "measurement": {"rc": 0}}}
    (run,) = nccl_tests_plan.plan_runs(kept, ["all_reduce_perf"], False, inputs)
    assert (run["run"], run["kept"]) == (False, {"rc": 0})
    assert nccl_tests_plan.plan_runs(kept, ["all_reduce_perf"], True, inputs)[0]["run"] is True
    changed = {**inputs, "args": ["-g", "4"]}
    assert nccl_tests_plan.plan_runs(kept, ["all_reduce_perf"], False, changed)[0]["run"] is True
    group = nccl_tests_plan.plan_runs(kept, ["all_reduce_perf"], False, inputs, inputs, "pair")
    assert [(r["key"], r["run"]) for r in group] == [
        ("node/all_reduce_perf", False),
        ("group/pair/all_reduce_perf", True),
    ]


def test_the_h100_capture_passes_its_published_gate_at_the_largest_size_and_fails_it_on_average():
    run = measured("nccl-tests-290-all_reduce-h100-8gpu-single-node.txt")
    assert nccl_tests_plan.judge(run, 460, "largest") == (True, [])
    assert nccl_tests_plan.judge(run, 460, "avg") == (
        False, ["avg bus bandwidth 439.369 GB/s is below min_busbw_gbps 460"])  # fmt: skip


def test_an_unhandled_cuda_error_fails_with_it():
    passed, reasons = nccl_tests_plan.judge(
        measured("nccl-tests-124-all_reduce-rtx3090-unhandled-cuda-error.txt", 1), 460
    )
    assert passed is False
    assert reasons[:2] == ["the benchmark exited with return code 1",
                           "Test NCCL failure at all_reduce.cu:44: unhandled cuda error"]  # fmt: skip


def test_gpudirect_rdma_expected_but_disabled_fails_the_group_run():
    # NCCL's own lines where nvidia-peermem was missing (NVIDIA/nccl#1676), after a real two-node table.
    run = measured("nccl-tests-290-all_reduce-h100-2node-srun-label.txt")
    run["transport"] = nccl_tests.parse((NCCL / "nccl-1676-gdr-disabled-info-lines.txt").read_text())["transport"]
    passed, reasons = nccl_tests_plan.judge(run, None, "largest", "auto", gdr_expected=True)
    assert (passed, reasons) == (False, [
        "GPUDirect RDMA was expected (nvidia-peermem is ready) but NCCL did not use it on every network channel "
        "(NCCL_DEBUG=INFO lines)"])  # fmt: skip
    assert nccl_tests_plan.judge(run, None, "largest", "auto", gdr_expected=None) == (True, [])
    _passed, reasons = nccl_tests_plan.judge(measured("nccl-tests-290-all_reduce-h100-2node-srun-label.txt"), None,
                                             "largest", "required")  # fmt: skip
    assert reasons == ["GPUDirect RDMA was expected (nccl_tests_gpudirect_rdma is required) but the output does not "
                       "show it (NCCL_DEBUG=INFO lines)"]  # fmt: skip


def test_records_keep_fresh_measurements_and_say_what_check_mode_did_not_run():
    inputs = {"args": [], "env": {}, "mpirun": None, "versions": {}}
    runs = nccl_tests_plan.plan_runs({}, ["all_reduce_perf", "alltoall_perf"], False, inputs)
    fresh = {**nccl_tests.parse((NCCL / "nccl-tests-290-all_reduce-h100-8gpu-single-node.txt").read_text()), "rc": 0}
    result = nccl_tests_plan.records(runs, [{**fresh, "item": runs[0]}, {"skipped": True, "item": runs[1]}],
                                     "2026-11-30T00:00:00Z", 460, "largest", "auto", None)  # fmt: skip
    assert list(result["kept"]) == ["node/all_reduce_perf"]
    assert result["kept"]["node/all_reduce_perf"]["measurement"]["measured_at"] == "2026-11-30T00:00:00Z"
    first, second = result["records"]
    assert (first["passed"], first["busbw_gbps"], first["gate_gbps"]) == (True, 476.53, 460)
    assert (second["passed"], second["reasons"]) == (None, ["not run (check mode)"])
    marker = {"profile": "hgx_h100_8gpu"}
    report = nccl_tests_plan.report("n1", "node", "hgx_h100_8gpu", marker, {}, result["records"])
    assert report["passed"] is None
    assert report["summary"] == (
        "[SIMULATED hgx_h100_8gpu] n1 (hgx_h100_8gpu): all_reduce_perf passed, largest busbw 476.53 GB/s (gate 460); "
        "alltoall_perf not run (check mode) (gate 460)"
    )
    assert "not a measurement" in report["note"]


@pytest.mark.parametrize(("failed", "passed"), [(None, True), ("all_reduce_perf pairs FAIL: x", False)])
def test_a_node_report_carries_its_part_of_the_pairs(failed, passed):
    fresh = {**nccl_tests.parse((NCCL / "nccl-tests-290-all_reduce-h100-8gpu-single-node.txt").read_text()), "rc": 0}
    runs = nccl_tests_plan.plan_runs({}, ["all_reduce_perf"], False, {"args": [], "env": {}, "mpirun": None})
    records = nccl_tests_plan.records(runs, [{**fresh, "item": runs[0]}], "t", 460, "largest", "auto", None)["records"]
    pairs = {"outcome": "PASS" if passed else "FAIL", "summary": "all_reduce_perf pairs ...", "failed": failed}
    report = nccl_tests_plan.report("n1", "node", "hgx_h100_8gpu", None, {}, records, None, pairs)
    assert report["passed"] is passed and report["pairs"] == pairs
    assert report["summary"].endswith("(gate 460); all_reduce_perf pairs ...")
    assert "pairs" not in nccl_tests_plan.report("n1", "node", "hgx_h100_8gpu", None, {}, records)


@pytest.mark.parametrize(
    ("user", "entry", "problem"),
    [
        ("gpuops-nccl", None, None),
        ("gpuops-nccl", ["x", "998", "998", "gpuops.bringup nccl_tests benchmark user", "/home/gpuops-nccl", "/bin/sh"],
         None),
        # The role's account from before it marked them: its name, a system uid, its shell.
        ("gpuops-nccl", ["x", "998", "998", "", "/home/gpuops-nccl", "/bin/sh"], None),
        ("toor", ["x", "0", "0", "", "/root", "/bin/bash"], "nccl_tests_user toor is uid 0"),
        ("alice", ["x", "1000", "1000", "Alice,,,", "/home/alice", "/bin/bash"],
         "nccl_tests_user is alice, an existing account this role did not create (uid 1000, shell /bin/bash)"),
        ("gpuops-nccl", ["x", "1001", "1001", "", "/home/gpuops-nccl", "/bin/bash"], "an existing account"),
        ("daemon", ["x", "1", "1", "daemon", "/usr/sbin", "/usr/sbin/nologin"], "(uid 1, shell /usr/sbin/nologin)"),
    ],
)  # fmt: skip
def test_user_problem(user, entry, problem):
    found = nccl_tests_plan.user_problem(user, entry)
    assert (found is None) == (problem is None), found
    assert problem is None or problem in found
