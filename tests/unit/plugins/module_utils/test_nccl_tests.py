"""nccl-tests parser over real outputs (tests/fixtures/nccl, sources in tests/fixtures/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import nccl_tests

NCCL = Path(__file__).resolve().parents[3] / "fixtures" / "nccl"
H100_SINGLE = "nccl-tests-290-all_reduce-h100-8gpu-single-node.txt"
H100_SRUN = "nccl-tests-290-all_reduce-h100-2node-srun-label.txt"
GATHER_TRUNCATED = "nccl-tests-350-gather-a100-2node-gdrdma-trace-truncated.txt"
WARN_ABORT = "nccl-tests-294-all_reduce-h100-2node-nccl-warn-abort.txt"
CUDA_ERROR = "nccl-tests-124-all_reduce-rtx3090-unhandled-cuda-error.txt"
CUDA_ERROR_INFO = "nccl-tests-124-all_reduce-rtx3090-unhandled-cuda-error-debug-info.txt"
WRONG = "olivia-all_reduce-gh200-4node-wrong-results.txt"
OLD_FORMAT = "superbench-all_reduce-a100-8gpu-old-format.txt"
ALLTOALL = "nccl-tests-287-alltoall-rtx5090-single-gpu.txt"
GDR_DISABLED = "nccl-1676-gdr-disabled-info-lines.txt"


def text(name):
    return (NCCL / name).read_text()


def parse(name):
    return nccl_tests.parse(text(name))


KEYS = (
    "test",
    "nccl_version",
    "cuda_version",
    "rows",
    "ranks",
    "hosts",
    "avg_busbw_gbps",
    "max_busbw_gbps",
    "largest_busbw_gbps",
    "out_of_bounds",
    "passed",
)
CASES = {
    # 8 H100 over NVLink (NVLS): peak busbw 476.53 GB/s at 4 GiB, the average of six sizes 439.369.
    H100_SINGLE: (None, None, None, 6, 8, ["node005"], 439.369, 476.53, 476.53, 0, True),
    # Two H100 nodes through srun --label; -c 0, so #wrong is N/A.
    H100_SRUN: (None, None, None, 11, 16, ["node005", "node007"], 142.735, 167.87, 155.57, 0, True),
    # gather_perf over RoCE/IB with GPUDirect RDMA, pasted up to 11 GB of a 12 GB sweep.
    GATHER_TRUNCATED: ("gather_perf", "2.16.5", "11.8", 85, 2, ["n013", "n014"], None, 23.61, 10.91, None, False),
    # Two nodes that never got past bootstrap: NCCL WARN, Test NCCL failure, mpirun aborts.
    WARN_ABORT: (None, "2.18.3", "12.2", 0, 16, ["h100-2", "h100-4"], None, None, None, None, False),
    CUDA_ERROR: (None, None, None, 0, 2, ["ArchLinux"], None, None, None, None, False),
    CUDA_ERROR_INFO: (None, "2.15.5", "11.8", 0, 2, ["ArchLinux"], None, None, None, None, False),
    # Slingshot without the right environment: corrupted transfers; the version comes from the header's code.
    WRONG: (
        "all_reduce_perf",
        "2.29.2",
        None,
        28,
        16,
        [f"gpu-1-{n}" for n in (43, 47, 49, 51)],
        None,
        89.85,
        89.85,
        None,
        False,
    ),
    # The old layout: no root column, "error" instead of "#wrong".
    OLD_FORMAT: (None, None, None, 34, 8, ["sb-validation-scus-000001"], 68.4048, 235.26, 235.26, 0, True),
    ALLTOALL: (None, None, None, 1, 1, ["GENOA-01"], 0.0, 0.0, 0.0, 0, True),
    GDR_DISABLED: (None, None, None, 0, 0, [], None, None, None, None, False),
}


def overview(parsed):
    passed, _reasons = nccl_tests.verdict(parsed)
    return (
        parsed["test"],
        parsed["nccl_version"],
        parsed["cuda_version"],
        len(parsed["results"]),
        len(parsed["devices"]),
        sorted({d["host"] for d in parsed["devices"]}),
        parsed["avg_busbw_gbps"],
        parsed["max_busbw_gbps"],
        parsed["largest_busbw_gbps"],
        parsed["out_of_bounds"],
        passed,
    )


@pytest.mark.parametrize(("name", "expected"), list(CASES.items()), ids=list(CASES))
def test_parse_overview(name, expected):
    assert dict(zip(KEYS, overview(parse(name)), strict=True)) == dict(zip(KEYS, expected, strict=True))


@pytest.mark.parametrize(
    ("name", "index", "expected"),
    [
        (
            H100_SINGLE,
            -1,
            {
                "size": 4294967296,
                "count": 1073741824,
                "type": "float",
                "redop": "sum",
                "root": -1,
                "out_of_place": {
                    "time_us": 15870.0,
                    "algbw_gbps": 270.63,
                    "busbw_gbps": 473.6,
                    "wrong": 0,
                    "error": None,
                },
                "in_place": {"time_us": 15773.0, "algbw_gbps": 272.3, "busbw_gbps": 476.53, "wrong": 0, "error": None},
            },
        ),
        (
            H100_SRUN,
            0,
            {
                "size": 8388608,
                "count": 2097152,
                "type": "float",
                "redop": "sum",
                "root": -1,
                "out_of_place": {
                    "time_us": 215.3,
                    "algbw_gbps": 38.96,
                    "busbw_gbps": 73.04,
                    "wrong": None,
                    "error": None,
                },
                "in_place": {"time_us": 180.0, "algbw_gbps": 46.6, "busbw_gbps": 87.38, "wrong": None, "error": None},
            },
        ),
        (
            GATHER_TRUNCATED,
            0,
            {
                "size": 134217728,
                "count": 16777216,
                "type": "float",
                "redop": "none",
                "root": 0,
                "out_of_place": {
                    "time_us": 3324.7,
                    "algbw_gbps": 40.37,
                    "busbw_gbps": 20.19,
                    "wrong": 0,
                    "error": None,
                },
                "in_place": {"time_us": 3003.4, "algbw_gbps": 44.69, "busbw_gbps": 22.34, "wrong": 0, "error": None},
            },
        ),
        (
            WRONG,
            21,
            {
                "size": 2097152,
                "count": 2097152,
                "type": "int8",
                "redop": "sum",
                "root": -1,
                "out_of_place": {
                    "time_us": 6249.2,
                    "algbw_gbps": 0.34,
                    "busbw_gbps": 0.63,
                    "wrong": 18134,
                    "error": None,
                },
                "in_place": {"time_us": 6142.32, "algbw_gbps": 0.34, "busbw_gbps": 0.64, "wrong": 9609, "error": None},
            },
        ),
        (
            OLD_FORMAT,
            -1,
            {
                "size": 8589934592,
                "count": 2147483648,
                "type": "float",
                "redop": "sum",
                "root": None,
                "out_of_place": {
                    "time_us": 63896.0,
                    "algbw_gbps": 134.44,
                    "busbw_gbps": 235.26,
                    "wrong": None,
                    "error": None,
                },
                "in_place": {
                    "time_us": 63959.0,
                    "algbw_gbps": 134.3,
                    "busbw_gbps": 235.03,
                    "wrong": None,
                    "error": None,
                },
            },
        ),
        (
            ALLTOALL,
            0,
            {
                "size": 33554432,
                "count": 8388608,
                "type": "float",
                "redop": "none",
                "root": -1,
                "out_of_place": {"time_us": 19.56, "algbw_gbps": 1715.44, "busbw_gbps": 0.0, "wrong": 0, "error": None},
                "in_place": {"time_us": 0.78, "algbw_gbps": 43046.1, "busbw_gbps": 0.0, "wrong": None, "error": None},
            },
        ),
    ],
)
def test_parse_rows(name, index, expected):
    assert parse(name)["results"][index] == expected


def test_parse_devices_of_both_layouts():
    assert parse(H100_SINGLE)["devices"][1] == {
        "rank": 1,
        "pid": 295203,
        "host": "node005",
        "device": 1,
        "bus_id": "0x6d",
        "name": "NVIDIA H100 80GB HBM3",
    }
    assert parse(OLD_FORMAT)["devices"][7] == {
        "rank": 7,
        "pid": 112424,
        "host": "sb-validation-scus-000001",
        "device": 7,
        "bus_id": "0x00",
        "name": "A100-SXM4-40GB",
    }
    assert parse(WRONG)["devices"][15]["bus_id"] == "0039:01:00"


@pytest.mark.parametrize(
    ("name", "params"),
    [
        (
            H100_SINGLE,
            {
                "nthread": 1,
                "ngpus": 8,
                "min_bytes": 134217728,
                "max_bytes": 4294967296,
                "step": "2(factor)",
                "warmup_iters": 5,
                "iters": 2,
                "agg_iters": 1,
                "validation": 1,
                "graph": 0,
            },
        ),
        (
            OLD_FORMAT,
            {
                "nthread": 1,
                "ngpus": 8,
                "min_bytes": 1,
                "max_bytes": 8589934592,
                "step": "2(factor)",
                "warmup_iters": 5,
                "iters": 20,
                "validation": 0,
            },
        ),
    ],
)
def test_parse_params(name, params):
    assert parse(name)["params"] == params


def test_tests_version_header():
    parsed = parse(WRONG)
    assert (parsed["tests_version"], parsed["test"], parsed["concluded"]) == ("2.17.9", "all_reduce_perf", False)


@pytest.mark.parametrize(("code", "version"), [("22902", "2.29.2"), (21805, "2.18.5"), (2708, "2.7.8")])
def test_version_from_code(code, version):
    assert nccl_tests.version_from_code(code) == version


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Every network channel of rank 0 went through GPUDirect RDMA.
        (
            GATHER_TRUNCATED,
            {
                "network": "IB",
                "net_devices": ["mlx5_0:1/RoCE", "mlx5_2:1/IB"],
                "channels": {"NET/IB": 6},
                "net_channels": 6,
                "gdr_channels": 6,
                "gpudirect_rdma": True,
                "gpudirect_rdma_evidence": "channels",
            },
        ),
        # The DGX OS 25.01 regression: NCCL disabled GDR on every HCA.
        (
            GDR_DISABLED,
            {
                "network": None,
                "net_devices": [],
                "channels": {},
                "net_channels": 0,
                "gdr_channels": 0,
                "gpudirect_rdma": False,
                "gpudirect_rdma_evidence": "hca",
            },
        ),
        # A workstation: sockets for the network (unused), P2P between the two GPUs, nothing said about GDR.
        (
            CUDA_ERROR_INFO,
            {
                "network": "Socket",
                "net_devices": [
                    "enp8s0:143.248.56.121",
                    "br-2178a67b2ff7:172.23.0.1",
                    "veth018915b:fe80::6832:a2ff:fe5b:c212%veth018915b",
                    "veth2d267e7:fe80::b07e:48ff:fe46:3fe2%veth2d267e7",
                    "veth13a831b:fe80::4036:64ff:fe56:4cd6%veth13a831b",
                    "vethbffaff7:fe80::4c9b:4bff:fef4:30b6%vethbffaff7",
                ],
                "channels": {"P2P/direct": 8},
                "net_channels": 0,
                "gdr_channels": 0,
                "gpudirect_rdma": None,
                "gpudirect_rdma_evidence": None,
            },
        ),
        # HPC-X's SHARP plugin: the network is the plugin's name, the HCAs carry /IB/SHARP.
        (
            WARN_ABORT,
            {
                "network": "IBext_v6",
                "net_devices": [f"mlx5_{n}:1/IB/SHARP" for n in range(1, 9)],
                "channels": {},
                "net_channels": 0,
                "gdr_channels": 0,
                "gpudirect_rdma": None,
                "gpudirect_rdma_evidence": None,
            },
        ),
        (H100_SINGLE, nccl_tests.empty_result()["transport"]),
    ],
)
def test_transport(name, expected):
    assert parse(name)["transport"] == expected


def test_gdr_not_used_on_every_channel():
    # The gather run with one receive channel line of rank 0 rewritten as a non-GDR path, as NCCL prints it
    # when the peer has no GPUDirect RDMA ("via NET/IB/1").
    lines = text(GATHER_TRUNCATED).replace("[receive] via NET/IB/1/GDRDMA\n", "[receive] via NET/IB/1\n", 1)
    transport = nccl_tests.parse(lines)["transport"]
    assert (transport["net_channels"], transport["gdr_channels"], transport["gpudirect_rdma"]) == (6, 5, False)


@pytest.mark.parametrize(
    ("name", "warnings", "errors"),
    [
        (
            WARN_ABORT,
            ["Net : connecting to address  with family 33621 is neither AF_INET(2) nor AF_INET6(10)"],
            [
                "Test NCCL failure at common.cu:1057: internal error",
                "mpirun: a process exited with non-zero status and the job was aborted (exit code 3)",
                "the run ended before its summary ('# Avg bus bandwidth' missing)",
            ],
        ),
        (
            CUDA_ERROR,
            [],
            [
                "Test NCCL failure at all_reduce.cu:44: unhandled cuda error",
                "the run ended before its summary ('# Avg bus bandwidth' missing)",
            ],
        ),
        (
            CUDA_ERROR_INFO,
            ["Cuda failure 'CUDA driver is a stub library'"],
            [
                "Test NCCL failure at all_reduce.cu:44: unhandled cuda error",
                "the run ended before its summary ('# Avg bus bandwidth' missing)",
            ],
        ),
        (
            WRONG,
            [],
            [
                "#wrong > 0: 6 of 28 sizes returned wrong data, the first at 2097152 bytes (18134 out-of-place, "
                "9609 in-place)",
                "the run ended before its summary ('# Avg bus bandwidth' missing); last size reached 134217728 "
                "bytes (maxBytes 134217728)",
            ],
        ),
        (
            GATHER_TRUNCATED,
            [],
            [
                "the run ended before its summary ('# Avg bus bandwidth' missing); last size reached 11408506880 "
                "bytes (maxBytes 12884901888)"
            ],
        ),
        (GDR_DISABLED, [], ["no nccl-tests output found: no header, result rows or summary"]),
        (H100_SINGLE, [], []),
        (OLD_FORMAT, [], []),
    ],
)
def test_warnings_and_errors(name, warnings, errors):
    parsed = parse(name)
    assert (parsed["warnings"], parsed["errors"]) == (warnings, errors)


def test_out_of_bounds_failed():
    # The passing single-node run with its summary line edited to the FAILED form nccl-tests prints.
    edited = text(H100_SINGLE).replace("# Out of bounds values : 0 OK", "# Out of bounds values : 108 FAILED")
    parsed = nccl_tests.parse(edited)
    assert (parsed["out_of_bounds"], parsed["out_of_bounds_ok"]) == (108, False)
    assert parsed["errors"] == ["Out of bounds values: 108 FAILED"]


@pytest.mark.parametrize("cut", [14, 17, 20, 21])
def test_a_run_cut_short(cut):
    # The single-node run cut after `cut` lines, as a killed or hung run leaves it.
    parsed = nccl_tests.parse("\n".join(text(H100_SINGLE).splitlines()[:cut]))
    passed, reasons = nccl_tests.verdict(parsed)
    assert not passed
    assert parsed["avg_busbw_gbps"] is None
    assert len(parsed["results"]) == max(0, cut - 15)
    assert any(r.startswith("the run ended before its summary") for r in reasons)


@pytest.mark.parametrize(
    ("output", "error"),
    [
        ("", "no nccl-tests output found (empty output)"),
        ("\n  \n", "no nccl-tests output found (empty output)"),
        (None, "no nccl-tests output found (empty output)"),
        # Real output of another tool.
        (
            (NCCL.parent / "infiniband" / "ibstat" / "gpud-h100-some-down-0.txt").read_text(),
            "no nccl-tests output found: no header, result rows or summary",
        ),
        ("bash: all_reduce_perf: command not found\n", "no nccl-tests output found: no header, result rows or summary"),
    ],
)
def test_empty_or_foreign_output(output, error):
    parsed = nccl_tests.parse(output)
    assert parsed["errors"] == [error]
    assert nccl_tests.verdict(parsed) == (False, [error])


def test_rows_without_a_header_are_read_by_their_width():
    # Result rows pasted without the header lines (as in many issue threads).
    rows = [line for line in text(GATHER_TRUNCATED).splitlines() if line.strip()[:1].isdigit()]
    rows += [line for line in text(OLD_FORMAT).splitlines() if line.strip()[:1].isdigit()]
    parsed = nccl_tests.parse("\n".join(rows))
    assert len(parsed["results"]) == 85 + 34
    assert parsed["results"][0]["root"] == 0
    assert parsed["results"][-1]["redop"] == "sum"
    assert parsed["results"][-1]["root"] is None
    assert parsed["results"][-1]["out_of_place"]["busbw_gbps"] == 235.26


@pytest.mark.parametrize(
    ("name", "rc", "minimum", "metric", "passed", "reasons"),
    [
        (H100_SINGLE, 0, 400, "max", True, []),
        (H100_SINGLE, 0, 400, "largest", True, []),
        (
            H100_SINGLE,
            0,
            450,
            "avg",
            False,
            ["avg bus bandwidth 439.369 GB/s is below min_busbw_gbps 450"],
        ),
        (H100_SINGLE, 0, 480, "max", False, ["max bus bandwidth 476.53 GB/s is below min_busbw_gbps 480"]),
        # Two H100 nodes peaking at 167.87 GB/s miss a 180 GB/s fabric threshold.
        (H100_SRUN, 0, 180, "max", False, ["max bus bandwidth 167.87 GB/s is below min_busbw_gbps 180"]),
        (OLD_FORMAT, None, 200, "max", True, []),
        (
            GATHER_TRUNCATED,
            124,
            20,
            "avg",
            False,
            [
                "the benchmark exited with return code 124",
                "the run ended before its summary ('# Avg bus bandwidth' missing); last size reached 11408506880 "
                "bytes (maxBytes 12884901888)",
                "no avg bus bandwidth to compare with min_busbw_gbps 20",
            ],
        ),
        (
            CUDA_ERROR,
            3,
            None,
            "max",
            False,
            [
                "the benchmark exited with return code 3",
                "Test NCCL failure at all_reduce.cu:44: unhandled cuda error",
                "the run ended before its summary ('# Avg bus bandwidth' missing)",
                "no result rows in the output",
            ],
        ),
    ],
)
def test_verdict(name, rc, minimum, metric, passed, reasons):
    assert nccl_tests.verdict(parse(name), rc, minimum, metric) == (passed, reasons)


def test_a_non_zero_exit_fails_a_complete_output():
    assert nccl_tests.verdict(parse(H100_SINGLE), rc=1) == (False, ["the benchmark exited with return code 1"])


@pytest.mark.parametrize(
    ("mpirun", "env", "args"),
    [
        ({}, [], []),
        (
            {"hostfile": "/etc/gpuops/hostfile", "np": 16, "npernode": 8, "extra_args": ["--bind-to", "numa"]},
            ["NCCL_DEBUG"],
            [
                "--hostfile",
                "/etc/gpuops/hostfile",
                "-np",
                "16",
                "--npernode",
                "8",
                "--bind-to",
                "numa",
                "-x",
                "NCCL_DEBUG",
            ],
        ),
        ({"export": ["LD_LIBRARY_PATH", "NCCL_DEBUG"]}, ["NCCL_DEBUG"], ["-x", "NCCL_DEBUG", "-x", "LD_LIBRARY_PATH"]),
    ],
)
def test_mpirun_args(mpirun, env, args):
    assert nccl_tests.mpirun_args(mpirun, env) == args


@pytest.mark.parametrize(
    ("code", "version"),
    # The first code of each scheme, and codes whose digits a wrong divisor or modulus would misplace.
    [(10000, "1.0.0"), (9999, "9.9.99"), (21900, "2.19.0"), (30000, "3.0.0"), (1000, "1.0.0"), (2100, "2.1.0")],
)
def test_version_from_code_at_the_edges_of_its_two_schemes(code, version):
    assert nccl_tests.version_from_code(code) == version


def header_tokens(name):
    """The column header line of a capture ('#  size  count  type ... time  algbw  busbw ...'), split."""
    return next(line.split() for line in text(name).splitlines() if " size " in line and " time " in line)


def row_tokens(name, index):
    return [line.split() for line in text(name).splitlines() if line.strip()[:1].isdigit()][index]


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        (H100_SINGLE, (["size", "count", "type", "redop", "root"], "#wrong")),
        (OLD_FORMAT, (["size", "count", "type", "redop"], "error")),
    ],
)
def test_columns_come_from_the_header(name, columns):
    assert nccl_tests._columns(header_tokens(name)) == columns


@pytest.mark.parametrize(
    "tokens",
    [
        ["#", "size", "count", "type"],  # no time column
        ["#", "count", "type", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"],  # no size
        # A value column too many, and a key column nccl-tests never printed.
        ["#", "size", "count", "type", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "x"],
        ["#", "size", "count", "dtype", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"],
    ],
)
def test_lines_that_are_no_column_header(tokens):
    assert nccl_tests._columns(tokens) is None


def test_a_header_without_its_hash_is_still_a_header():
    tokens = header_tokens(H100_SINGLE)
    assert nccl_tests._columns([t for t in tokens if t != "#"]) == nccl_tests._columns(tokens)


@pytest.mark.parametrize(
    ("tokens", "columns"),
    [
        # The current layout: redop and root.
        (row_tokens(H100_SINGLE, -1), (["size", "count", "type", "redop", "root"], "#wrong")),
        # The old layout with redop (all_reduce), its error column N/A (validation off).
        (row_tokens(OLD_FORMAT, -1), (["size", "count", "type", "redop"], "#wrong")),
        # The old layout's rooted collectives (broadcast, reduce) print a root where all_reduce prints its redop;
        # with validation on, the error column holds a number as %g prints it.
        (
            ["1024", "256", "float", "0", "36.07", "0.03", "0.05", "2e-07", "35.77", "0.03", "0.05", "2e-07"],
            (["size", "count", "type", "root"], "error"),
        ),
        (
            ["1024", "256", "float", "sum", "36.07", "0.03", "0.05", "0.001", "35.77", "0.03", "0.05", "0.001"],
            (["size", "count", "type", "redop"], "error"),
        ),
        # The oldest layout: neither redop nor root.
        (
            ["1024", "256", "float", "36.07", "0.03", "0.05", "0", "35.77", "0.03", "0.05", "0"],
            (["size", "count", "type"], "#wrong"),
        ),
        (["1024", "256", "float", "36.07", "0.03", "0.05", "0"], None),
    ],
)
def test_columns_guessed_from_a_row_alone(tokens, columns):
    assert nccl_tests._guess_columns(tokens) == columns


def test_an_error_column_with_numbers():
    """The old layout with validation on: its error column holds the largest error, not a count."""
    edited = text(OLD_FORMAT).replace("63896  134.44  235.26    N/A", "63896  134.44  235.26  2e-07", 1)
    last = nccl_tests.parse(edited)["results"][-1]
    assert (last["out_of_place"]["error"], last["out_of_place"]["wrong"]) == (2e-07, None)
    assert (last["in_place"]["error"], last["in_place"]["wrong"]) == (None, None)
    assert nccl_tests.parse(text(H100_SINGLE))["results"][-1]["in_place"]["error"] is None


@pytest.mark.parametrize(
    ("row", "kept"),
    [
        # The last row of the 8x H100 run, and the same cut short or with a cell that is no number where a number
        # belongs (as a killed run or interleaved output leaves it).
        ("4294967296  1073741824  float  sum  -1  15870  270.63  473.60  0  15773  272.30  476.53  0", True),
        ("4294967296  1073741824  float  sum  -1  15870  270.63  473.60  0  15773", False),
        ("4294967296  1073741824  float  sum  -1  15870  270.63  473.60  0  15773  272.30  476.53  0  7", False),
        ("4294967296  1073741824  float  sum  N/A  15870  270.63  473.60  0  15773  272.30  476.53  0", False),
        ("4294967296  many  float  sum  -1  15870  270.63  473.60  0  15773  272.30  476.53  0", False),
        ("4294967296  1073741824  float  sum  -1  15870  270.63  N/A  0  15773  272.30  N/A  0", False),
        # One side with a figure is a measurement.
        ("4294967296  1073741824  float  sum  -1  15870  270.63  473.60  0  15773  272.30  N/A  0", True),
        ("4294967296  1073741824  float  sum  -1  15870  270.63  N/A  0  15773  272.30  476.53  0", True),
    ],
)
def test_a_row_is_kept_only_when_every_cell_reads(row, kept):
    header = next(line for line in text(H100_SINGLE).splitlines() if " size " in line and " time " in line)
    results = nccl_tests.parse(f"{header}\n{row}\n")["results"]
    assert len(results) == (1 if kept else 0)
    if kept:
        assert results[0]["in_place"]["time_us"] == 15773.0


def test_a_row_of_the_oldest_layout_is_read():
    row = "1024 256 float 36.07 0.03 0.05 0 35.77 0.03 0.05 0"
    (result,) = nccl_tests.parse(row)["results"]
    assert (result["type"], result["redop"], result["root"], result["in_place"]["busbw_gbps"]) == (
        "float", None, None, 0.05)  # fmt: skip


def test_an_empty_result_has_every_key_parse_sets():
    assert set(nccl_tests.empty_result()) == set(nccl_tests.parse(text(H100_SINGLE)))
    assert nccl_tests.parse("")["tests_version"] is None


def test_the_default_metric_is_the_peak():
    # Two H100 nodes: peak 167.87 GB/s, 155.57 at the largest size.
    assert nccl_tests.verdict(parse(H100_SRUN), 0, 160) == (True, [])
    assert nccl_tests.verdict(parse(H100_SRUN), 0, 160, "largest")[0] is False


@pytest.mark.parametrize(("wrong", "failed"), [("0", False), ("1", True)])
def test_one_wrong_element_fails_the_run(wrong, failed):
    """The 8x H100 run with the #wrong cells of its last row set to wrong."""
    lines = text(H100_SINGLE).splitlines()
    last = max(i for i, line in enumerate(lines) if line.strip()[:1].isdigit())
    tokens = lines[last].split()
    tokens[8] = tokens[12] = wrong
    lines[last] = "  ".join(tokens)
    errors = nccl_tests.parse("\n".join(lines))["errors"]
    assert bool(errors) is failed
    assert not failed or errors[0].startswith("#wrong > 0: 1 of 6 sizes returned wrong data")


def test_an_aborted_mpirun_without_an_exit_code():
    edited = "\n".join(line for line in text(WARN_ABORT).splitlines() if "Exit code:" not in line)
    assert "mpirun: a process exited with non-zero status and the job was aborted" in nccl_tests.parse(edited)["errors"]


def test_warnings_are_kept_up_to_twenty():
    lines = [f"node1:1:1 [0] NCCL WARN Net : connecting to address {n} failed" for n in range(21)]
    assert len(nccl_tests.parse("\n".join(lines))["warnings"]) == 20
    assert len(nccl_tests.parse("\n".join(lines[:20]))["warnings"]) == 20


@pytest.mark.parametrize(
    ("flags", "gpudirect_rdma"),
    [((1, 1), True), ((1, 0), False), ((0,), False)],
)
def test_gpudirect_rdma_from_the_ring_lines(flags, gpudirect_rdma):
    """NCCL 2.19 and later print 'Connected all rings, use ring PXN 0 GDR <0|1>' once per rank (the line as public
    NCCL_DEBUG=INFO logs show it); without network channel lines they are the evidence."""
    lines = [f"host:1:2 [{rank}] NCCL INFO Connected all rings, use ring PXN 0 GDR {flag}"
             for rank, flag in enumerate(flags)]  # fmt: skip
    transport = nccl_tests.parse("\n".join(lines))["transport"]
    assert (transport["gpudirect_rdma"], transport["gpudirect_rdma_evidence"]) == (gpudirect_rdma, "rings")


def test_ring_lines_yield_to_channel_lines():
    lines = text(GATHER_TRUNCATED) + "\nn013:1:2 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 0\n"
    transport = nccl_tests.parse(lines)["transport"]
    assert (transport["gpudirect_rdma"], transport["gpudirect_rdma_evidence"]) == (True, "channels")


def test_hca_lines_say_which_hca_has_gpudirect_rdma():
    """The DGX OS 25.01 lines with mlx5_1's said Enabled: NCCL can use GPUDirect RDMA through one HCA at least."""
    enabled = text(GDR_DISABLED).replace("Disabled for HCA 1 'mlx5_1'", "Enabled for HCA 1 'mlx5_1'")
    assert enabled != text(GDR_DISABLED)
    assert nccl_tests.parse(enabled)["transport"]["gpudirect_rdma"] is True
