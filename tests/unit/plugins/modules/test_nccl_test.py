"""nccl_test through the module harness, on real nccl-tests outputs (tests/fixtures/nccl, tests/fixtures/SOURCES.md).

The command table stands in for the benchmark: it returns what a real run
printed. Where a thread did not show a run's exit code, the code used is the
one nccl-tests exits with for that failure elsewhere (noted at the case).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils import basic

from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE
from ansible_collections.gpuops.bringup.plugins.modules import nccl_test

NCCL = Path(__file__).resolve().parents[3] / "fixtures" / "nccl"
BENCH = "/opt/nccl-tests/build/all_reduce_perf"
MPIRUN = "/usr/bin/mpirun"
TIMEOUT = "/usr/bin/timeout"
ARGS = ["-b", "8", "-e", "8G", "-f", "2", "-g", "8"]
TOOLS = {"all_reduce_perf": BENCH, BENCH: BENCH, "mpirun": MPIRUN, "timeout": TIMEOUT}


def text(name):
    return (NCCL / name).read_text()


def timed(*cmd, seconds=1800):
    return (TIMEOUT, "--kill-after=30", str(seconds), *cmd)


def test_single_node_run_passes(run_module, command_table):
    table = command_table(
        TOOLS, {timed(BENCH, *ARGS): (0, text("nccl-tests-290-all_reduce-h100-8gpu-single-node.txt"), "")}
    )
    result, failed = run_module(
        nccl_test.main,
        {"binary": "all_reduce_perf", "args": ARGS, "min_busbw_gbps": 400, "env": {"NCCL_DEBUG": "WARN"}},
        table,
    )
    assert not failed
    assert result["changed"] is False
    assert (result["passed"], result["reasons"], result["rc"], result["timed_out"]) == (True, [], 0, False)
    assert result["msg"] == "all_reduce_perf passed: peak bus bandwidth 476.53 GB/s"
    assert (result["avg_busbw_gbps"], result["max_busbw_gbps"]) == (439.369, 476.53)
    assert len(result["results"]) == 6
    assert len(result["devices"]) == 8
    assert result["cmd"] == list(timed(BENCH, *ARGS))
    assert result["output_tail"][-2:] == ["# Avg bus bandwidth    : 439.369", "#"]
    ((_argv, env),) = table.calls
    assert env == {"NCCL_DEBUG": "WARN", **C_LOCALE}


def test_bandwidth_below_the_minimum_is_a_failed_run(run_module, command_table):
    table = command_table(TOOLS, {timed(BENCH): (0, text("nccl-tests-290-all_reduce-h100-8gpu-single-node.txt"), "")})
    result, failed = run_module(nccl_test.main, {"binary": BENCH, "min_busbw_gbps": 450, "busbw_metric": "avg"}, table)
    assert not failed
    assert result["passed"] is False
    assert result["reasons"] == ["avg bus bandwidth 439.369 GB/s is below min_busbw_gbps 450"]
    assert result["msg"] == "all_reduce_perf failed: avg bus bandwidth 439.369 GB/s is below min_busbw_gbps 450"


def test_mpirun_run_that_aborts(run_module, command_table, tmp_path):
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("h100-2 slots=8\nh100-4 slots=8\n")
    mpirun = {"hostfile": str(hostfile), "np": 16, "extra_args": ["--bind-to", "none"], "export": ["LD_LIBRARY_PATH"]}
    argv = timed(
        MPIRUN,
        "--hostfile",
        str(hostfile),
        "-np",
        "16",
        "--bind-to",
        "none",
        "-x",
        "NCCL_DEBUG",
        "-x",
        "LD_LIBRARY_PATH",
        BENCH,
        "-b",
        "128M",
    )
    # mpirun's own report is in the capture: "Exit code: 3".
    output = text("nccl-tests-294-all_reduce-h100-2node-nccl-warn-abort.txt")
    table = command_table(TOOLS, {argv: (3, output, "")})
    result, failed = run_module(
        nccl_test.main,
        {"binary": BENCH, "args": ["-b", "128M"], "mpirun": mpirun, "env": {"NCCL_DEBUG": "INFO"}},
        table,
    )
    assert not failed
    assert result["passed"] is False
    assert result["rc"] == 3
    assert result["reasons"][:3] == [
        "the benchmark exited with return code 3",
        "Test NCCL failure at common.cu:1057: internal error",
        "mpirun: a process exited with non-zero status and the job was aborted (exit code 3)",
    ]
    assert result["nccl_warnings"] == [
        "Net : connecting to address  with family 33621 is neither AF_INET(2) nor AF_INET6(10)"
    ]
    assert result["nccl_version"] == "2.18.3"
    assert result["transport"]["network"] == "IBext_v6"
    assert result["msg"].startswith("all_reduce_perf failed: the benchmark exited with return code 3 (and ")


def test_unhandled_cuda_error_is_data(run_module, command_table):
    # nccl-tests exits 3 (testNcclError) on a Test NCCL failure: the 2-node capture's mpirun reports it.
    output = text("nccl-tests-124-all_reduce-rtx3090-unhandled-cuda-error-debug-info.txt")
    table = command_table(TOOLS, {timed(BENCH, "-g", "2"): (3, output, "")})
    result, failed = run_module(nccl_test.main, {"binary": BENCH, "args": ["-g", "2"]}, table)
    assert not failed
    assert result["passed"] is False
    assert "Test NCCL failure at all_reduce.cu:44: unhandled cuda error" in result["reasons"]
    assert result["nccl_warnings"] == ["Cuda failure 'CUDA driver is a stub library'"]


def test_a_hung_run_stopped_by_the_timeout(run_module, command_table):
    # What the gather run had printed when it stopped: timeout(1) exits 124.
    output = text("nccl-tests-350-gather-a100-2node-gdrdma-trace-truncated.txt")
    table = command_table(TOOLS, {timed(BENCH, seconds=600): (124, output, "")})
    result, failed = run_module(nccl_test.main, {"binary": BENCH, "timeout": 600}, table)
    assert not failed
    assert (result["passed"], result["timed_out"], result["rc"]) == (False, True, 124)
    assert result["reasons"][:2] == [
        "the benchmark was stopped after the timeout of 600 seconds",
        "the benchmark exited with return code 124",
    ]
    assert result["transport"]["gpudirect_rdma"] is True
    assert result["test"] == "gather_perf"


def test_no_timeout(run_module, command_table):
    output = text("nccl-tests-290-all_reduce-h100-8gpu-single-node.txt")
    table = command_table(TOOLS, {(BENCH,): (0, output, "")})
    result, _failed = run_module(nccl_test.main, {"binary": BENCH, "timeout": 0}, table)
    assert (result["passed"], result["cmd"]) == (True, [BENCH])


def test_without_coreutils_timeout_the_run_is_unlimited(run_module, command_table, monkeypatch):
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda _module, warning: warned.append(warning))
    output = text("nccl-tests-290-all_reduce-h100-8gpu-single-node.txt")
    tools = {k: v for k, v in TOOLS.items() if k != "timeout"}
    table = command_table(tools, {(BENCH,): (0, output, "")})
    result, _failed = run_module(nccl_test.main, {"binary": BENCH}, table)
    assert result["passed"] is True
    assert warned == ["coreutils timeout is not installed: the benchmark runs without a time limit"]


def test_garbage_output_is_a_failed_run(run_module, command_table):
    table = command_table(TOOLS, {timed(BENCH): (0, "\x00\x7fELF garbage\n", "")})
    result, failed = run_module(nccl_test.main, {"binary": BENCH}, table)
    assert not failed
    assert result["passed"] is False
    assert result["reasons"] == ["no nccl-tests output found: no header, result rows or summary"]


def test_empty_output_with_an_error_on_stderr(run_module, command_table):
    stderr = "error while loading shared libraries: libnccl.so.2: cannot open shared object file\n"
    table = command_table(TOOLS, {timed(BENCH): (127, "", stderr)})
    result, failed = run_module(nccl_test.main, {"binary": BENCH}, table)
    assert not failed
    assert result["passed"] is False
    assert result["reasons"][0] == "the benchmark exited with return code 127"
    assert result["output_tail"] == ["", stderr.strip()]


def test_check_mode_does_not_run_a_benchmark(run_module, command_table):
    table = command_table(TOOLS, {})
    result, failed = run_module(nccl_test.main, {"binary": BENCH, "args": ARGS}, table, check_mode=True)
    assert not failed
    assert (result["skipped"], result["passed"], result["changed"]) == (True, None, False)
    assert result["msg"] == "check mode: all_reduce_perf not run"
    assert result["cmd"] == list(timed(BENCH, *ARGS))
    assert table.calls == []


@pytest.mark.parametrize("check_mode", [False, True])
def test_log_path_is_parsed_in_check_mode_too(run_module, command_table, check_mode):
    log = str(NCCL / "olivia-all_reduce-gh200-4node-wrong-results.txt")
    result, failed = run_module(nccl_test.main, {"log_path": log}, command_table({}, {}), check_mode=check_mode)
    assert not failed
    assert result["passed"] is False
    assert result["reasons"][0].startswith("#wrong > 0: 6 of 28 sizes returned wrong data")
    assert (result["test"], result["nccl_version"], result["rc"]) == ("all_reduce_perf", "2.29.2", None)
    assert "cmd" not in result


def test_log_path_of_a_passing_old_format_run(run_module, command_table):
    log = str(NCCL / "superbench-all_reduce-a100-8gpu-old-format.txt")
    result, _failed = run_module(nccl_test.main, {"log_path": log, "min_busbw_gbps": 230}, command_table({}, {}))
    assert (result["passed"], result["max_busbw_gbps"], result["test"]) == (True, 235.26, None)
    assert result["msg"] == "nccl-tests passed: peak bus bandwidth 235.26 GB/s"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"binary": "all_reduce_perf"}, "all_reduce_perf was not found on this host"),
        ({"log_path": "/nonexistent/all_reduce.log"}, "log_path /nonexistent/all_reduce.log does not exist"),
        ({"binary": BENCH, "log_path": "/tmp/x.log"}, "parameters are mutually exclusive: binary|log_path"),
        ({}, "one of the following is required: binary, log_path"),
        ({"binary": BENCH, "timeout": -5}, "timeout must be 0 (no limit) or a number of seconds, got -5"),
        ({"binary": BENCH, "min_busbw_gbps": -1}, "min_busbw_gbps must not be negative, got -1.0"),
        ({"binary": BENCH, "busbw_metric": "median"}, "value of busbw_metric must be one of: max, largest, avg"),
        ({"binary": BENCH, "mpirun": "please"}, "mpirun must be true, false or a dict, got str: 'please'"),
        ({"binary": BENCH, "mpirun": {"hosts": "a,b"}}, "mpirun has unknown keys ['hosts']"),
        ({"binary": BENCH, "mpirun": {"np": 0}}, "mpirun.np must be a positive integer, got 0"),
        ({"binary": BENCH, "mpirun": {"np": "many"}}, "mpirun.np must be a positive integer, got 'many'"),
        ({"binary": BENCH, "mpirun": {"extra_args": "--bind-to none"}}, "mpirun.extra_args must be a list"),
        ({"binary": BENCH, "mpirun": {"hostfile": "/nonexistent/hostfile"}}, "mpirun.hostfile /nonexistent/hostfile"),
    ],
)
def test_bad_input_fails_with_a_message(run_module, command_table, args, message):
    tools = {k: v for k, v in TOOLS.items() if k != "all_reduce_perf"}
    result, failed = run_module(nccl_test.main, args, command_table(tools, {}))
    assert failed
    assert message in result["msg"]


def test_missing_mpirun_fails(run_module, command_table):
    tools = {k: v for k, v in TOOLS.items() if k != "mpirun"}
    result, failed = run_module(nccl_test.main, {"binary": BENCH, "mpirun": True}, command_table(tools, {}))
    assert failed
    assert result["msg"].startswith("mpirun was not found on this host")


@pytest.mark.parametrize("value", [True, "yes", {}])
def test_mpirun_with_its_defaults(run_module, command_table, value):
    output = text("nccl-tests-290-all_reduce-h100-8gpu-single-node.txt")
    table = command_table(TOOLS, {timed(MPIRUN, BENCH): (0, output, "")})
    result, failed = run_module(nccl_test.main, {"binary": BENCH, "mpirun": value}, table)
    assert not failed
    assert result["passed"] is True


@pytest.mark.parametrize("value", [False, "no", None])
def test_mpirun_off(run_module, command_table, value):
    output = text("nccl-tests-290-all_reduce-h100-8gpu-single-node.txt")
    table = command_table(TOOLS, {timed(BENCH): (0, output, "")})
    result, _failed = run_module(nccl_test.main, {"binary": BENCH, "mpirun": value}, table)
    assert result["cmd"] == list(timed(BENCH))
