"""gpu_facts' main() over real nvidia-smi outputs (tests/fixtures/nvidia_smi, sources in tests/fixtures/SOURCES.md).

The command table answers each nvidia-smi command with a capture; a command the
table does not hold fails the test, so a case also proves which commands ran.
Some cases pair a query and a topology or NVLink capture of the same model taken
on different machines: they test the wiring, the parsers' own tests the values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE
from ansible_collections.gpuops.bringup.plugins.modules import gpu_facts

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"
SMI = "/usr/bin/nvidia-smi"
TOOLS = {"nvidia-smi": SMI}
QUERY = (SMI, "-q", "-x")
TOPO = (SMI, "topo", "-m")
NVLINK = (SMI, "nvlink", "-s")
NOT_SUPPORTED = (3, "", "")


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def ok(name):
    return (0, fixture(name), "")


def codes(facts):
    return sorted((f["code"], f["severity"], f["device"]) for f in facts["findings"])


def run(run_module, command_table, outputs, check_mode=False, tools=None, **args):
    table = command_table(TOOLS if tools is None else tools, outputs)
    result, failed = run_module(gpu_facts.main, args, table, check_mode=check_mode)
    return result, failed, table


@pytest.mark.parametrize("check_mode", [False, True])
def test_hgx_h100_node_reads_query_topology_and_nvlink(run_module, command_table, check_mode):
    outputs = {
        QUERY: ok("h100-sxm-x8-565.derived.xml"),
        TOPO: ok("a100-sxm-x8-17nic.topo.txt"),
        NVLINK: ok("h100-x8-first2.nvlink.txt"),
    }
    result, failed, table = run(run_module, command_table, outputs, check_mode=check_mode, expected_count=8)
    assert not failed
    assert set(result) == {"changed", "ansible_facts"}
    assert result["changed"] is False
    facts = result["ansible_facts"]["gpu"]
    assert (facts["driver_version"], facts["cuda_version"], facts["count"]) == ("565.57.01", "12.7", 8)
    assert facts["simulated"] is False
    assert [d["architecture"] for d in facts["devices"]] == ["hopper"] * 8
    assert facts["devices"][0]["nvlink"] == {"active": 18, "inactive": 0}
    assert "nvlink" not in facts["devices"][2]
    assert facts["topology"]["pairs"]["GPU0-GPU7"] == "NV12"
    assert [g["index"] for g in facts["nvlink"]] == [0, 1]
    assert facts["findings"] == []
    assert [call[0] for call in table.calls] == [QUERY, TOPO, NVLINK]
    assert all(call[1] == C_LOCALE for call in table.calls)


def test_h800_node_keeps_its_own_topology_and_links(run_module, command_table):
    outputs = {
        QUERY: ok("h800-i0-525.derived.xml"),
        TOPO: ok("h800-x8-4nic-pasted.topo.txt"),
        NVLINK: ok("h800-x8-excerpt.nvlink.txt"),
    }
    result, failed, _table = run(run_module, command_table, outputs)
    facts = result["ansible_facts"]["gpu"]
    assert not failed
    assert facts["count"] == 1
    assert facts["topology"]["nic_affinity"]["GPU3"]["mlx5_1"] == "PIX"
    assert facts["devices"][0]["nvlink"] == {"active": 8, "inactive": 0}
    # Captured with -i 0: the module itself never restricts the query, so seven GPUs unaccounted for are an error.
    assert codes(facts) == [("ecc_disabled", "info", "00000000:18:00.0"), ("gpus_not_listed", "error", "node")]


@pytest.mark.parametrize(
    ("query", "args", "expected"),
    [
        ("h100-sxm-x8-565-gpu3-missing.derived.xml", {"expected_count": 8}, [("gpu_count_low", "error", "node")]),
        ("h200-sxm-550.derived.xml", {"expected_model": "NVIDIA H200"}, []),
        (
            "h200-sxm-550.derived.xml",
            {"expected_model": "NVIDIA H100 80GB HBM3"},
            [("gpu_model_mismatch", "error", "00000000:03:00.0")],
        ),
        (
            "h100-sxm-x8-565-remap.derived.xml",
            {},
            [("remap_failure", "error", "00000000:BA:00.0"), ("remap_pending", "warning", "00000000:3A:00.0")],
        ),
        ("tesla-t4-515.xml", {"expected_count": 1}, [("pcie_link_degraded", "warning", "00000000:00:1E.0")]),
        (
            "v100-pcie-32gb-460-retired-pending.derived.xml",
            {},
            [("retired_pages_pending", "warning", "00000000:21:01.0")],
        ),
    ],
)
def test_health_problems_are_findings_not_failures(run_module, command_table, query, args, expected):
    outputs = {QUERY: ok(query), TOPO: NOT_SUPPORTED, NVLINK: NOT_SUPPORTED}
    result, failed, _table = run(run_module, command_table, outputs, **args)
    assert not failed
    assert result["changed"] is False
    facts = result["ansible_facts"]["gpu"]
    assert (facts["topology"], facts["nvlink"]) == (None, None)
    assert codes(facts) == sorted(expected)


def test_an_inactive_nvlink_is_an_error_finding_on_that_gpu(run_module, command_table):
    outputs = {
        QUERY: ok("v100-pcie-32gb-460.xml"),
        TOPO: NOT_SUPPORTED,
        NVLINK: ok("v100-sxm2-inactive.nvlink.txt"),
    }
    result, failed, _table = run(run_module, command_table, outputs)
    assert not failed
    assert codes(result["ansible_facts"]["gpu"]) == [("nvlink_down", "error", "3")]


@pytest.mark.parametrize(
    ("name", "rc", "code"),
    [
        ("driver-unreachable.txt", 9, "driver_unreachable"),
        ("driver-library-mismatch.txt", 18, "driver_library_mismatch"),
        ("no-devices.txt", 6, "no_devices"),
        ("no-supported-gpus.txt", 255, "no_devices"),
    ],
)
def test_no_usable_gpu_is_a_count_of_zero_and_a_finding(run_module, command_table, name, rc, code):
    # Only the query is in the table: topo and nvlink must not run without GPUs.
    result, failed, table = run(run_module, command_table, {QUERY: (rc, fixture(name), "")}, expected_count=8)
    assert not failed
    facts = result["ansible_facts"]["gpu"]
    assert (facts["count"], facts["devices"], facts["driver_version"]) == (0, [], None)
    assert codes(facts) == sorted([(code, "error", "node"), ("gpu_count_low", "error", "node")])
    assert facts["findings"][0]["message"] == fixture(name).splitlines()[0]
    assert len(table.calls) == 1


def test_missing_nvidia_smi_fails_clearly(run_module, command_table):
    result, failed, table = run(run_module, command_table, {}, tools={})
    assert failed
    assert result["msg"] == "nvidia-smi was not found on this host (searched PATH and the sbin directories)"
    assert table.calls == []


def test_other_non_zero_exit_fails_with_command_and_streams(run_module, command_table):
    stderr = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"
    result, failed, _table = run(run_module, command_table, {QUERY: (2, "", stderr)})
    assert failed
    assert result["msg"] == f"nvidia-smi -q -x failed with return code 2: {stderr.strip()}"
    assert (result["cmd"], result["rc"], result["stdout"], result["stderr"]) == ([*QUERY], 2, "", stderr)


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        ("", "nvidia-smi -q -x printed nothing"),
        (fixture("tesla-t4-515.xml")[:9000], "nvidia-smi -q -x output is not well-formed XML"),
        ("Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n", "not well-formed XML"),
        (fixture("a10-x4-2nic.topo.txt"), "not well-formed XML"),
    ],
)
def test_unparseable_query_output_fails_without_a_traceback(run_module, command_table, stdout, message):
    result, failed, _table = run(run_module, command_table, {QUERY: (0, stdout, "")})
    assert failed
    assert message in result["msg"]
    assert (result["cmd"], result["rc"]) == ([*QUERY], 0)


def test_unrecognised_topology_is_an_info_finding(run_module, command_table):
    outputs = {QUERY: ok("a100-sxm4-80gb-mig-535.xml"), TOPO: ok("driver-unreachable.txt"), NVLINK: (0, "", "")}
    result, failed, _table = run(run_module, command_table, outputs)
    assert not failed
    facts = result["ansible_facts"]["gpu"]
    assert (facts["topology"], facts["nvlink"]) == (None, [])
    assert codes(facts) == [("gpus_not_listed", "error", "node"), ("topology_unparsed", "info", "node")]


def test_topology_and_nvlink_can_be_skipped(run_module, command_table):
    result, failed, table = run(run_module, command_table, {QUERY: ok("a10g-515.xml")}, topology=False, nvlink=False)
    assert not failed
    facts = result["ansible_facts"]["gpu"]
    assert (facts["topology"], facts["nvlink"], facts["count"]) == (None, None, 1)
    assert [call[0] for call in table.calls] == [QUERY]


def test_simulated_hardware_is_reported(run_module, command_table, monkeypatch):
    marker = {"profile": "hgx_h100_8gpu", "captures": ["h100-sxm-x8-565.derived.xml"]}
    monkeypatch.setattr(gpu_facts.simulation, "simulated", lambda: marker)
    outputs = {QUERY: ok("h100-sxm-x8-565.derived.xml"), TOPO: NOT_SUPPORTED, NVLINK: NOT_SUPPORTED}
    result, failed, _table = run(run_module, command_table, outputs)
    assert not failed
    assert result["ansible_facts"]["gpu"]["simulated"] == marker


def test_unknown_option_is_rejected(run_module, command_table):
    result, failed, table = run(run_module, command_table, {}, expected_gpus=8)
    assert failed
    assert "expected_gpus" in result["msg"]
    assert table.calls == []
