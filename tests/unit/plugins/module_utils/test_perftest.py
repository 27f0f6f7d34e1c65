"""ib_write_bw's command line and output, on real captures (tests/fixtures/perftest, sources in SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import perftest

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "perftest"


def test_a_result_in_gbits():
    text = (FIXTURES / "perftest-273-write-bw-post-list-gbits.txt").read_text()
    parsed = perftest.parse_write_bw(text)
    assert parsed["rows"] == [
        {"bytes": 8, "iterations": 224958464, "peak_gbps": 0.0, "average_gbps": 0.48, "msg_rate_mpps": 7.498617}
    ]
    assert parsed["average_gbps"] == 0.48
    assert (parsed["device"], parsed["link_type"], parsed["gid_index"]) == ("ib0", "Ethernet", 2)
    assert parsed["messages"] == []


def test_no_device_on_debian12():
    stdout = (FIXTURES / "debian12-no-device.stdout").read_text()
    stderr = (FIXTURES / "debian12-no-device.stderr").read_text()
    parsed = perftest.parse_write_bw(stdout, stderr)
    assert parsed["rows"] == [] and parsed["average_gbps"] is None
    assert parsed["messages"] == [
        "Did not detect devices",
        "If device exists, check if driver is up",
        "Unable to find the Infiniband/RoCE device",
    ]


def test_argv_server_and_client():
    assert perftest.write_bw_argv("mlx5_0", 5, 65536, 18515) == [
        "ib_write_bw", "-d", "mlx5_0", "-D", "5", "-s", "65536", "-p", "18515", "-F", "--report_gbits",
    ]  # fmt: skip
    client = perftest.write_bw_argv("mlx5_0", 5, 65536, 18515, gid_index=3, use_cuda=0, server="10.0.0.1")
    assert client[-4:] == ["-x", "3", "--use_cuda=0", "10.0.0.1"]


def test_cuda_support_from_the_help():
    # Debian 12's perftest 4.5+0.17 lists no --use_cuda in `ib_write_bw --help` (seen on the bench, 2026-11-30).
    assert not perftest.supports_cuda("      --report_gbits  Report Max/Average BW of test in Gbit/sec")
    assert perftest.supports_cuda(" --use_cuda=<cuda device id> Use CUDA specific device for GPUDirect RDMA testing")
    # A CUDA build's help, as `grep cuda` showed it (public).
    assert perftest.supports_cuda((FIXTURES / "ib-write-bw-help-cuda-grep.txt").read_text())


@pytest.mark.parametrize(
    ("capture", "average", "rows", "device"),
    [
        # A note perftest printed inside the table, between the header and the row, is skipped.
        ("ib-write-bw-ndr-cx7-client-gbits.txt", 392.34, 1, "mlx5_0"),
        ("ib-write-bw-hdr-cx6-client-gbits.txt", 196.80, 23, "mlx5_0"),
        ("ib-write-bw-hdr-cx6-server-gbits.txt", 196.80, 1, "mlx5_0"),
        # The server's post ends at its row, without the closing dashed line.
        ("ib-write-bw-server-gbits.txt", 98.38, 1, "mlx5_0"),
        ("ib-write-bw-100g-client-gbits.txt", 98.38, 23, "mlx5_0"),
        ("ib-write-bw-cuda-client-gbits.txt", 80.96, 23, "mlx5_0"),
        ("ib-write-bw-cuda-server-gbits.txt", 80.96, 1, "mlx5_0"),
        # The simulated H100s' GPUDirect runs: the CUDA lines around the table are not rows.
        ("ib-write-bw-ndr-cuda-client.derived.txt", 392.34, 1, "mlx5_0"),
        ("ib-write-bw-ndr-cuda-server.derived.txt", 392.34, 1, "mlx5_0"),
    ],
)
def test_results_at_100_200_and_400_gbits(capture, average, rows, device):
    parsed = perftest.parse_write_bw((FIXTURES / capture).read_text())
    assert (parsed["average_gbps"], len(parsed["rows"]), parsed["device"]) == (average, rows, device)
    assert parsed["link_type"] == "IB"


@pytest.mark.parametrize(
    ("capture", "average", "rows", "gid_index"),
    [
        # Four QPs through rdma_cm at GID index 3, a 100G-class RoCE port.
        ("ib-write-bw-roce-oke-q4-client-gbits.txt", 98.01, 1, 3),
        # A 400G-class RoCE sweep that dies after its 65536-byte row: the failure lines are no rows.
        ("ib-write-bw-roce400-h200-sweep-failed.txt", 381.41, 16, 3),
        ("ib-write-bw-roce400-h200-client.derived.txt", 381.41, 16, 3),
        ("ib-write-bw-roce400-server.derived.txt", 381.41, 1, 3),
        # GID index 0 on a port whose GIDs are all zero: no QP reaches RTR, no table.
        ("ib-write-bw-roce-gid0-rtr-failed.txt", None, 0, 0),
    ],
)
def test_roce_results_name_their_gid_index(capture, average, rows, gid_index):
    parsed = perftest.parse_write_bw((FIXTURES / capture).read_text())
    assert (parsed["average_gbps"], len(parsed["rows"]), parsed["gid_index"]) == (average, rows, gid_index)
    assert parsed["link_type"] == "Ethernet"
