"""A node judged against its hardware profile, on the captured outputs the facts modules parse (SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter.hardware import FilterModule
from ansible_collections.gpuops.bringup.plugins.module_utils import infiniband, nvidia_smi, xid
from ansible_collections.gpuops.bringup.plugins.module_utils.hardware_report import hardware_report

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures"
H100 = yaml.safe_load((ROOT / "inventory" / "group_vars" / "hgx_h100_8gpu.yml").read_text())["gpuops_hardware"]
MARKER = {"profile": "hgx_h100_8gpu", "description": "simulated", "captures": []}


def gpu(name, simulated=False, **expect):
    """gpu_facts' facts for a captured nvidia-smi -q -x, as the module builds them."""
    query = nvidia_smi.parse_query_xml((FIXTURES / "nvidia_smi" / name).read_text())
    return {
        "simulated": simulated,
        "driver_version": query["driver_version"],
        "cuda_version": query["cuda_version"],
        "count": len(query["devices"]),
        "devices": query["devices"],
        "findings": nvidia_smi.findings(query, **expect),
    }


def ib(name, **expect):
    """ib_facts' facts for a captured ibstat."""
    devices = infiniband.parse_ibstat((FIXTURES / "infiniband" / "ibstat" / name).read_text())["devices"]
    return {"devices": devices, "findings": infiniband.findings(devices, **expect), "simulated": False}


def log(name):
    """xid_scan's result for a captured kernel log."""
    scanned = xid.scan((FIXTURES / "xid" / name).read_text())
    return {"source": "dmesg", "lines": scanned["lines"], "events": scanned["events"], "summary": scanned["summary"]}


EXPECT_GPU = {"expected_count": 8, "expected_model": "NVIDIA H100 80GB HBM3"}
EXPECT_IB = {"expected_active_ports": 8, "expected_rate_gbps": 400, "expected_link_layer": "InfiniBand"}
HEALTHY_IB = "gpud-h100-ib-bluefield3-all-active-2.txt"


def test_a_healthy_hgx_node_passes():
    report = hardware_report(
        "gpu01",
        H100,
        gpu("h100-sxm-x8-565.derived.xml", **EXPECT_GPU),
        ib(HEALTHY_IB, **EXPECT_IB),
        log("dmesg-iso-clean.log"),
    )
    assert report["passed"] is True
    assert report["problems"] == []
    assert report["gpu"]["models"] == ["NVIDIA H100 80GB HBM3"]
    assert report["gpu"]["fabric_states"] == ["Completed"]
    assert report["infiniband"]["active_ports"] == 8
    assert report["summary"] == (
        "gpu01 (hgx_h100_8gpu): 8/8 GPUs (NVIDIA H100 80GB HBM3), driver 565.57.01; "
        "8/8 InfiniBand ports active at 400 Gb/s; kernel log (dmesg): 0 GPU event(s) - passed"
    )


@pytest.mark.parametrize(
    ("gpu_file", "ib_file", "log_file", "codes"),
    [
        ("h100-sxm-x8-565-gpu3-missing.derived.xml", HEALTHY_IB, "dmesg-iso-clean.log", [("error", "gpu_count_low")]),
        (
            "h100-sxm-x8-565-remap.derived.xml",
            HEALTHY_IB,
            "dmesg-iso-clean.log",
            [("error", "remap_failure"), ("warning", "remap_pending")],
        ),
        (
            "h100-sxm-x8-565.derived.xml",
            HEALTHY_IB,
            "dmesg-ctime-xid79-fallen-off-bus.log",
            [("error", "xid_79"), ("error", "fallen_off_bus")],
        ),
        (
            "h100-sxm-x8-565-fabric-in-progress.derived.xml",
            HEALTHY_IB,
            "dmesg-iso-clean.log",
            [("error", "fabric_not_completed")] * 8,
        ),
        ("h100-sxm-x8-565.derived.xml", "gpud-h100-some-down-0.txt", "dmesg-iso-clean.log", []),
    ],
)
def test_faults_become_problems_worst_first(gpu_file, ib_file, log_file, codes):
    report = hardware_report("gpu01", H100, gpu(gpu_file, **EXPECT_GPU), ib(ib_file, **EXPECT_IB), log(log_file))
    assert [(p["severity"], p["code"]) for p in report["problems"]] == codes
    assert report["passed"] is not any(severity == "error" for severity, _code in codes)
    errors = sum(1 for severity, _code in codes if severity == "error")
    counts = f" ({errors} error(s), {len(codes) - errors} warning(s))" if codes else ""
    assert report["summary"].endswith(("FAILED" if errors else "passed") + counts)


def test_a_gpu_of_another_model_fails_the_node():
    report = hardware_report("gpu01", H100, gpu("h200-sxm-550.derived.xml", **EXPECT_GPU))
    assert report["passed"] is False
    assert [p["code"] for p in report["problems"]] == ["gpu_count_low", "gpu_model_mismatch"]
    assert "is a NVIDIA H200; this node should have NVIDIA H100 80GB HBM3" in report["problems"][1]["message"]


def test_an_xid_names_the_gpu_and_what_to_do():
    problem = hardware_report("gpu01", H100, kernel_log=log("dmesg-ctime-xid79-fallen-off-bus.log"))["problems"][0]
    assert problem["device"] == "0000:a1:00.0"
    assert problem["message"].startswith("xid_79 on 0000:a1:00.0: GPU has fallen off the bus. Action: Drain the node")


@pytest.mark.parametrize(("fail_on", "passed"), [("error", True), ("warning", False), ("never", True)])
def test_fail_on_sets_the_bar(fail_on, passed):
    # The T4 capture's link trained at x8 of x16: a warning, no error.
    t4 = gpu("tesla-t4-515.xml", expected_count=1)
    report = hardware_report("t4", {"profile": "t4", "gpu": {"count": 1}}, t4, fail_on=fail_on)
    assert [p["code"] for p in report["problems"]] == ["pcie_link_degraded"]
    assert report["passed"] is passed


def test_simulated_hardware_is_labelled():
    report = hardware_report("gpu01", H100, gpu("h100-sxm-x8-565.derived.xml", simulated=MARKER, **EXPECT_GPU))
    assert report["simulated"] == MARKER
    assert report["summary"].startswith("[SIMULATED hgx_h100_8gpu] gpu01 (hgx_h100_8gpu): 8/8 GPUs")


def test_nothing_read_is_said():
    report = hardware_report("cpu01", {"profile": "bench_container"})
    assert report["passed"] is True
    assert report["summary"] == "cpu01 (bench_container): nothing to check - passed"


def test_bad_arguments_are_filter_errors():
    report = FilterModule().filters()["hardware_report"]
    with pytest.raises(AnsibleFilterError, match="needs the node's gpuops_hardware mapping"):
        report(None, "gpu01")
    with pytest.raises(AnsibleFilterError, match="fail_on must be one of error, warning, never, not 'sometimes'"):
        report(H100, "gpu01", fail_on="sometimes")
