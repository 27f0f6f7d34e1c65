"""ib_write_bw's command line and output, on real captures (tests/fixtures/perftest, sources in SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

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
