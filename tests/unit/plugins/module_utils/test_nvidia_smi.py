"""nvidia_smi's parsers and findings on real nvidia-smi outputs (tests/fixtures/nvidia_smi).

Where each file comes from, and how the derived ones were made, is in
tests/fixtures/SOURCES.md.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import nvidia_smi

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia_smi"


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def script(name):
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def codes(found):
    return sorted((f["code"], f["severity"], f["device"]) for f in found)


# ---------------------------------------------------------------------------------------------------------------
# nvidia-smi -q -x

# (fixture, driver, cuda, attached, listed, first GPU: {field: value})
QUERIES = [
    (
        "a100-sxm4-80gb-mig-535.xml",
        "535.54.03",
        "12.2",
        4,
        1,
        {
            "name": "NVIDIA A100-SXM4-80GB",
            "pci_bus_id": "00000000:01:00.0",
            "serial": "1650522003820",
            "architecture": "ampere",
            "compute_capability": "8.0",
            "memory_total_mib": 81920,
            "persistence_mode": False,
            "mig_mode": {"current": "Enabled", "pending": "Enabled"},
            "pcie": {"gen_current": 4, "gen_max": 4, "width_current": 16, "width_max": 16, "replays": 0},
            "power": {"draw_w": 67.03, "limit_w": 500.0, "default_limit_w": 500.0, "max_limit_w": 500.0},
            "temperature": {"gpu_c": 27, "memory_c": 44, "slowdown_c": 89, "shutdown_c": 92},
            "remapped_rows": {"correctable": None, "uncorrectable": None, "pending": None, "failure": None},
            "fabric": None,
        },
    ),
    (
        "a100-sxm4-40gb-mig-510.xml",
        "510.47.03",
        "11.6",
        1,
        1,
        {
            "name": "NVIDIA A100-SXM4-40GB",
            "memory_total_mib": 40960,
            "ecc": {
                "mode": "Enabled",
                "mode_pending": "Enabled",
                "volatile": {"correctable": None, "uncorrectable": None},
                "aggregate": {"correctable": 0, "uncorrectable": 0},
            },
            "power": {"draw_w": 66.92, "limit_w": 400.0, "default_limit_w": 400.0, "max_limit_w": 400.0},
            "clock_event_reasons": [],
        },
    ),
    (
        "tesla-t4-515.xml",
        "515.105.01",
        "11.7",
        1,
        1,
        {
            "name": "Tesla T4",
            "serial": "0000000000000",
            "architecture": "turing",
            "compute_capability": "7.5",
            "memory_total_mib": 15360,
            "pcie": {"gen_current": 3, "gen_max": 3, "width_current": 8, "width_max": 16, "replays": 0},
            "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": False},
            "remapped_rows": {"correctable": None, "uncorrectable": None, "pending": None, "failure": None},
            "power": {"draw_w": 26.78, "limit_w": 70.0, "default_limit_w": 70.0, "max_limit_w": 70.0},
        },
    ),
    (
        "a10g-515.xml",
        "515.105.01",
        "11.7",
        1,
        1,
        {
            "name": "NVIDIA A10G",
            "pci_device_id": "000000DE",
            "architecture": "ampere",
            "compute_capability": "8.6",
            "pcie": {"gen_current": 1, "gen_max": 4, "width_current": 8, "width_max": 16, "replays": 0},
            "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
            "clock_event_reasons": ["gpu_idle"],
            "temperature": {"gpu_c": 17, "memory_c": None, "slowdown_c": 95, "shutdown_c": 98},
        },
    ),
    (
        "v100-pcie-32gb-460.xml",
        "460.39",
        "11.2",
        1,
        1,
        {
            "name": "Tesla V100-PCIE-32GB",
            "uuid": "GPU-e77ce5d8-8b63-c936-3c1b-839d45bcd0f2",
            "architecture": "volta",
            "compute_capability": "7.0",
            "memory_total_mib": 32510,
            "ecc": {
                "mode": "Enabled",
                "mode_pending": "Enabled",
                "volatile": {"correctable": 0, "uncorrectable": 0},
                "aggregate": {"correctable": 0, "uncorrectable": 0},
            },
            "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": False},
            "power": {"draw_w": 170.16, "limit_w": 250.0, "default_limit_w": 250.0, "max_limit_w": 250.0},
            "reset_required": None,
        },
    ),
    (
        "h100-sxm-x8-565.derived.xml",
        "565.57.01",
        "12.7",
        8,
        8,
        {
            "name": "NVIDIA H100 80GB HBM3",
            "pci_bus_id": "00000000:18:00.0",
            "pci_device_id": "233010DE",
            "architecture": "hopper",
            "compute_capability": "9.0",
            "memory_total_mib": 81559,
            "persistence_mode": True,
            "pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16, "replays": 7},
            "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
            "fabric": {
                "state": "Completed",
                "status": "Success",
                "clique_id": "0",
                "cluster_uuid": "00000000-0000-0000-0000-000000000000",
            },
            "reset_required": False,
            "recovery_action": None,
        },
    ),
    (
        "h200-sxm-550.derived.xml",
        "550.90.12",
        "12.4",
        1,
        1,
        {
            "name": "NVIDIA H200",
            "memory_total_mib": 143771,
            "architecture": "hopper",
            "vbios_version": "96.00.A5.00.03",
        },
    ),
    (
        "h800-i0-525.derived.xml",
        "525.105.17",
        "12.0",
        8,
        1,
        {
            "name": "NVIDIA H800",
            "ecc": {
                "mode": "Disabled",
                "mode_pending": "Disabled",
                "volatile": {"correctable": None, "uncorrectable": None},
                "aggregate": {"correctable": None, "uncorrectable": None},
            },
            "power": {"draw_w": 74.71, "limit_w": 700.0, "default_limit_w": 700.0, "max_limit_w": 700.0},
            "fabric": {"state": "Completed", "status": "Success", "clique_id": None, "cluster_uuid": None},
        },
    ),
    (
        # The stored copy of the report lacks the PCI, memory, clock, temperature and power sections
        # (tests/fixtures/SOURCES.md): those read as unknown, and the bus id comes from the gpu id attribute.
        "l40s-1gpu.derived.xml",
        "570.172.08",
        "12.8",
        1,
        1,
        {
            "name": "NVIDIA L40S",
            "uuid": "GPU-eaf0bc12-3996-9441-6965-b6955608929c",
            "serial": "1651624010662",
            "pci_bus_id": "00000000:34:00.0",
            "pci_device_id": None,
            "minor_number": 0,
            "architecture": "ada",
            "compute_capability": "8.9",
            "vbios_version": "95.02.66.00.15",
            "memory_total_mib": None,
            "persistence_mode": True,
            "mig_mode": {"current": None, "pending": None},
            "pcie": {"gen_current": None, "gen_max": None, "width_current": None, "width_max": None, "replays": None},
            "ecc": {
                "mode": "Enabled",
                "mode_pending": "Enabled",
                "volatile": {"correctable": 0, "uncorrectable": 0},
                "aggregate": {"correctable": 0, "uncorrectable": 0},
            },
            "retired_pages": {"single_bit": None, "double_bit": None, "pending": None},
            "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": None, "failure": None},
            "power": {"draw_w": None, "limit_w": None, "default_limit_w": None, "max_limit_w": None},
            "temperature": {"gpu_c": None, "memory_c": None, "slowdown_c": None, "shutdown_c": None},
            "clock_event_reasons": [],
            "fabric": None,
        },
    ),
]


@pytest.mark.parametrize(("name", "driver", "cuda", "attached", "listed", "first"), QUERIES, ids=str)
def test_parse_query_xml_reads_real_captures(name, driver, cuda, attached, listed, first):
    query = nvidia_smi.parse_query_xml(fixture(name))
    assert (query["driver_version"], query["cuda_version"], query["attached_gpus"]) == (driver, cuda, attached)
    assert len(query["devices"]) == listed
    assert [d["index"] for d in query["devices"]] == list(range(listed))
    device = query["devices"][0]
    assert {key: device[key] for key in first} == first


def test_parse_query_xml_lists_mig_devices():
    device = nvidia_smi.parse_query_xml(fixture("a100-sxm4-80gb-mig-535.xml"))["devices"][0]
    assert device["mig_devices"] == [
        {
            "index": i,
            "gpu_instance_id": i + 3,
            "compute_instance_id": 0,
            "multiprocessor_count": 14,
            "memory_total_mib": 19968,
        }
        for i in range(4)
    ]


def test_parse_query_xml_reads_every_gpu_of_an_8_gpu_board():
    devices = nvidia_smi.parse_query_xml(fixture("h100-sxm-x8-565.derived.xml"))["devices"]
    assert [d["pci_bus_id"][9:11] for d in devices] == ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]
    assert [d["pcie"]["replays"] for d in devices] == [7, 0, 0, 0, 0, 4, 15, 0]
    assert [d["temperature"]["gpu_c"] for d in devices] == [30, 30, 31, 29, 28, 30, 29, 29]
    assert len({d["uuid"] for d in devices}) == 8
    assert all(d["fabric"]["state"] == "Completed" for d in devices)


def test_parse_query_xml_tolerates_a_value_split_over_two_lines():
    # netdata's copy of the A100 capture wraps one throttle reason's text onto a second line.
    device = nvidia_smi.parse_query_xml(fixture("a100-sxm4-40gb-mig-510.xml"))["devices"][0]
    assert device["clock_event_reasons"] == []


def test_architecture_and_capability_come_from_the_catalog_by_device_id_then_name(monkeypatch):
    calls = []
    real = nvidia_smi.gpu_catalog.lookup

    def lookup(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(nvidia_smi.gpu_catalog, "lookup", lookup)
    v100 = nvidia_smi.parse_query_xml(fixture("v100-pcie-32gb-460.xml"))["devices"][0]
    a10g = nvidia_smi.parse_query_xml(fixture("a10g-515.xml"))["devices"][0]
    # The V100 capture has no product_architecture; its device id 1DB6 is in the catalog.
    assert (v100["architecture"], v100["compute_capability"]) == ("volta", "7.0")
    # The A10G capture's device id (000000DE) is not a real one: the name decides.
    assert (a10g["architecture"], a10g["compute_capability"]) == ("ampere", "8.6")
    assert calls == [
        {"pci_device_id": "1DB610DE"},
        {"pci_device_id": "000000DE"},
        {"product_name": "NVIDIA A10G"},
    ]


def test_xml_architecture_and_compute_cap_win_over_the_catalog(monkeypatch):
    monkeypatch.setattr(nvidia_smi.gpu_catalog, "lookup", lambda **_kw: None)
    # Drivers that print <compute_cap> put it beside the product name; add one to a real capture.
    text = fixture("tesla-t4-515.xml").replace(
        "<product_name>Tesla T4</product_name>", "<product_name>Tesla T4</product_name><compute_cap>7.5</compute_cap>"
    )
    with_cap = nvidia_smi.parse_query_xml(text)["devices"][0]
    without = nvidia_smi.parse_query_xml(fixture("v100-pcie-32gb-460.xml"))["devices"][0]
    assert (with_cap["architecture"], with_cap["compute_capability"]) == ("turing", "7.5")
    assert (without["architecture"], without["compute_capability"]) == (None, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "printed nothing"),
        ("  \n\t\n", "printed nothing"),
        (None, "printed nothing"),
        ("Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error", "not well-formed XML"),
        ("<html><body>502 Bad Gateway</body></html>", "root element <html>"),
        (
            '<?xml version="1.0"?><!DOCTYPE lol [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>'
            "<nvidia_smi_log>&lol2;</nvidia_smi_log>",
            "declares XML entities",
        ),
        ("<nvidia_smi_log><gpu>&xxe;</gpu></nvidia_smi_log>", "not well-formed XML"),
    ],
)
def test_parse_query_xml_rejects_bad_input_with_a_message(text, message):
    with pytest.raises(nvidia_smi.NvidiaSmiParseError, match=message):
        nvidia_smi.parse_query_xml(text)


@pytest.mark.parametrize("name", ["a100-sxm4-80gb-mig-535.xml", "h100-sxm-x8-565.derived.xml", "tesla-t4-515.xml"])
@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.99])
def test_parse_query_xml_rejects_truncated_captures(name, fraction):
    text = fixture(name)
    with pytest.raises(nvidia_smi.NvidiaSmiParseError, match="not well-formed XML"):
        nvidia_smi.parse_query_xml(text[: int(len(text) * fraction)])


def test_the_doctype_line_is_dropped_not_resolved():
    text = fixture("tesla-t4-515.xml")
    assert '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v11.dtd">' in text
    assert nvidia_smi.parse_query_xml(text)["devices"][0]["name"] == "Tesla T4"
    pointing_elsewhere = text.replace('"nvsmi_device_v11.dtd"', '"file:///etc/passwd"')
    assert nvidia_smi.parse_query_xml(pointing_elsewhere)["devices"][0]["name"] == "Tesla T4"


# ---------------------------------------------------------------------------------------------------------------
# findings

# (fixture, expected_count, findings as (code, severity, device))
FINDINGS = [
    ("h100-sxm-x8-565.derived.xml", 8, []),
    # Test data cut to one GPU of four (telegraf's), one captured with -i 0: the others are reported missing.
    ("a100-sxm4-80gb-mig-535.xml", None, [("gpus_not_listed", "error", "node")]),
    ("v100-pcie-32gb-460.xml", 1, []),
    ("tesla-t4-515.xml", 1, [("pcie_link_degraded", "warning", "00000000:00:1E.0")]),
    (
        "a10g-515.xml",
        None,
        [
            ("pcie_gen_below_max", "info", "00000000:00:1E.0"),
            ("pcie_link_degraded", "warning", "00000000:00:1E.0"),
        ],
    ),
    (
        "h800-i0-525.derived.xml",
        1,
        [("ecc_disabled", "info", "00000000:18:00.0"), ("gpus_not_listed", "error", "node")],
    ),
    ("h100-sxm-x8-565-gpu3-missing.derived.xml", 8, [("gpu_count_low", "error", "node")]),
    ("h100-sxm-x8-565-gpu3-missing.derived.xml", 7, []),
    (
        "h100-sxm-x8-565-remap.derived.xml",
        8,
        [("remap_failure", "error", "00000000:BA:00.0"), ("remap_pending", "warning", "00000000:3A:00.0")],
    ),
    (
        "h100-sxm-x8-565-ecc.derived.xml",
        8,
        [("ecc_uncorrectable", "error", "00000000:9A:00.0"), ("ecc_uncorrectable", "warning", "00000000:AB:00.0")],
    ),
    (
        "h100-sxm-x8-565-fabric-in-progress.derived.xml",
        8,
        [
            ("fabric_not_completed", "error", f"00000000:{bus}:00.0")
            for bus in ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
        ],
    ),
    ("h100-sxm-x8-565-slowdown.derived.xml", 8, [("clock_slowdown", "warning", "00000000:DB:00.0")]),
    ("h200-sxm-550-fabric-insufficient.derived.xml", 1, [("fabric_status_error", "error", "00000000:03:00.0")]),
    ("v100-pcie-32gb-460-retired-pending.derived.xml", 1, [("retired_pages_pending", "warning", "00000000:21:01.0")]),
    ("h100-sxm-x8-565-pcie-x8.derived.xml", 8, [("pcie_link_degraded", "warning", "00000000:2A:00.0")]),
    ("l40s-1gpu.derived.xml", 1, []),
    ("l40s-x4.derived.xml", 4, []),
    ("l40s-x4.derived.xml", 5, [("gpu_count_low", "error", "node")]),
]


@pytest.mark.parametrize(("name", "expected_count", "expected"), FINDINGS, ids=str)
def test_findings_on_captures_and_their_fault_variants(name, expected_count, expected):
    query = nvidia_smi.parse_query_xml(fixture(name))
    assert codes(nvidia_smi.findings(query, expected_count=expected_count)) == sorted(expected)


def test_findings_say_what_is_wrong_errors_first():
    query = nvidia_smi.parse_query_xml(fixture("h100-sxm-x8-565-remap.derived.xml"))
    found = nvidia_smi.findings(query, expected_count=9)
    assert [f["severity"] for f in found] == ["error", "error", "warning"]
    assert found[0]["message"] == "nvidia-smi sees 8 GPUs; this node should have 9"
    assert "GPU 2 (00000000:3A:00.0) has row remapping pending" in found[2]["message"]


def test_a_gpu_of_another_model_is_named():
    query = nvidia_smi.parse_query_xml(fixture("a10g-515.xml"))
    assert [
        f for f in nvidia_smi.findings(query, expected_model="NVIDIA L40S") if f["code"] == "gpu_model_mismatch"
    ] == [
        {
            "severity": "error",
            "device": "00000000:00:1E.0",
            "code": "gpu_model_mismatch",
            "message": "GPU 0 (00000000:00:1E.0) is a NVIDIA A10G; this node should have NVIDIA L40S",
        }
    ]


def test_a_link_trained_at_half_width_is_named():
    query = nvidia_smi.parse_query_xml(fixture("h100-sxm-x8-565-pcie-x8.derived.xml"))
    assert [d["pcie"]["width_current"] for d in query["devices"]] == [16, 8, 16, 16, 16, 16, 16, 16]
    assert {d["pcie"]["width_max"] for d in query["devices"]} == {16}
    (found,) = nvidia_smi.findings(query, expected_count=8)
    assert found["message"] == "GPU 1 (00000000:2A:00.0) PCIe link runs at x8 of x16"


def test_the_l40s_node_is_four_copies_of_the_captured_gpu():
    query = nvidia_smi.parse_query_xml(fixture("l40s-x4.derived.xml"))
    devices = query["devices"]
    assert (query["driver_version"], query["attached_gpus"], len(devices)) == ("570.172.08", 4, 4)
    assert [d["pci_bus_id"] for d in devices] == [f"00000000:{bus}:00.0" for bus in ("21", "41", "A1", "C1")]
    assert [d["minor_number"] for d in devices] == [0, 1, 2, 3]
    assert [d["uuid"][-4:] for d in devices] == ["929c", "929d", "929e", "929f"]
    assert [d["serial"] for d in devices] == ["1651624010662", "1651624010663", "1651624010664", "1651624010665"]
    assert {(d["name"], d["architecture"], d["compute_capability"]) for d in devices} == {("NVIDIA L40S", "ada", "8.9")}
    assert nvidia_smi.findings(query, expected_count=4, expected_model="NVIDIA L40S") == []
    # Apart from the replicated identity, every copy is the captured GPU.
    captured = nvidia_smi.parse_query_xml(fixture("l40s-1gpu.derived.xml"))["devices"][0]
    identity = ("index", "pci_bus_id", "minor_number", "uuid", "serial")
    for device in devices:
        assert {k: v for k, v in device.items() if k not in identity} == {
            k: v for k, v in captured.items() if k not in identity
        }


def test_uncorrectable_counts_are_summed_over_sram_and_dram():
    devices = nvidia_smi.parse_query_xml(fixture("h100-sxm-x8-565-ecc.derived.xml"))["devices"]
    assert devices[4]["ecc"]["volatile"] == {"correctable": 0, "uncorrectable": 3}
    assert devices[4]["ecc"]["aggregate"] == {"correctable": 0, "uncorrectable": 3}
    assert devices[5]["ecc"]["aggregate"] == {"correctable": 0, "uncorrectable": 1}


@pytest.mark.parametrize(
    ("name", "rc", "code", "message"),
    [
        (
            "driver-unreachable.txt",
            9,
            "driver_unreachable",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
            " Make sure that the latest NVIDIA driver is installed and running.",
        ),
        (
            "driver-library-mismatch.txt",
            18,
            "driver_library_mismatch",
            "Failed to initialize NVML: Driver/library version mismatch",
        ),
        ("no-devices.txt", 6, "no_devices", "No devices were found"),
        ("no-supported-gpus.txt", 255, "no_devices", "Failed to initialize NVML: No supported GPUs were found"),
    ],
)
def test_node_failures_become_a_finding(name, rc, code, message):
    failure = nvidia_smi.classify_failure(rc, fixture(name), "")
    assert failure == {"code": code, "rc": rc, "message": message}
    assert nvidia_smi.findings(None, failure, expected_count=8) == [
        {"severity": "error", "device": "node", "code": code, "message": message},
        {
            "severity": "error",
            "device": "node",
            "code": "gpu_count_low",
            "message": "nvidia-smi sees 0 GPUs; this node should have 8",
        },
    ]


def test_a_failure_on_stderr_is_recognised_and_others_are_not():
    assert nvidia_smi.classify_failure(9, "", fixture("driver-unreachable.txt"))["code"] == "driver_unreachable"
    assert nvidia_smi.classify_failure(2, "", "Invalid combination of input arguments.") is None
    assert nvidia_smi.classify_failure(1, "", "") is None


# ---------------------------------------------------------------------------------------------------------------
# nvidia-smi topo -m

# (fixture, GPU count, NIC legend, two pairs, GPU0's NIC links, GPU0 CPU and NUMA affinity)
TOPOLOGIES = [
    (
        "a100-sxm-x8-17nic.topo.txt",
        8,
        {"NIC0": "mlx5_2", "NIC15": "mlx5_17", "NIC16": "mlx5_bond_0"},
        {"GPU0-GPU1": "NV12", "GPU6-GPU7": "NV12"},
        {"mlx5_2": "PXB", "mlx5_5": "PXB", "mlx5_6": "SYS", "mlx5_bond_0": "SYS"},
        ("0-103", "0"),
    ),
    (
        "a10-x4-2nic.topo.txt",
        4,
        {"NIC0": "mlx5_0", "NIC1": "mlx5_1"},
        {"GPU0-GPU1": "SYS", "GPU2-GPU3": "SYS"},
        {"mlx5_0": "SYS", "mlx5_1": "SYS"},
        ("0-127", "0"),
    ),
    ("gtx1080ti-x2.topo.txt", 2, {}, {"GPU0-GPU1": "PHB"}, {}, ("0-11", None)),
    (
        "h100-x4-nv6-4nic.topo.txt",
        4,
        {"NIC0": "NIC0", "NIC3": "NIC3"},
        {"GPU0-GPU3": "NV6", "GPU1-GPU2": "NV6"},
        {"NIC0": "PIX", "NIC1": "SYS", "NIC2": "SYS", "NIC3": "SYS"},
        ("6,14,22,30", "3"),
    ),
    (
        "h800-x8-4nic-pasted.topo.txt",
        8,
        {"NIC0": "mlx5_0", "NIC3": "mlx5_3"},
        {"GPU0-GPU7": "NV8", "GPU3-GPU4": "NV8"},
        {"mlx5_0": "NODE", "mlx5_1": "NODE", "mlx5_2": "SYS", "mlx5_3": "SYS"},
        ("-31,64-95", "0"),
    ),
    (
        "rtx4090-x8-2nic-tabs.topo.txt",
        8,
        {"NIC0": "NIC0", "NIC1": "NIC1"},
        {"GPU0-GPU7": "SYS", "GPU5-GPU6": "SYS"},
        {"NIC0": "SYS", "NIC1": "SYS"},
        ("0-55,112-167", "0"),
    ),
]


@pytest.mark.parametrize(("name", "count", "nics", "pairs", "gpu0_nics", "affinity"), TOPOLOGIES, ids=str)
def test_parse_topology_reads_real_matrices(name, count, nics, pairs, gpu0_nics, affinity):
    topology = nvidia_smi.parse_topology(fixture(name))
    assert topology["gpus"] == [f"GPU{i}" for i in range(count)]
    assert len(topology["pairs"]) == count * (count - 1) // 2
    assert {k: topology["nics"][k] for k in nics} == nics
    assert {k: topology["pairs"][k] for k in pairs} == pairs
    assert {k: topology["nic_affinity"]["GPU0"][k] for k in gpu0_nics} == gpu0_nics
    assert (topology["cpu_affinity"]["GPU0"], topology["numa_affinity"]["GPU0"]) == affinity


def test_parse_topology_reads_each_gpus_own_nic_and_numa_node():
    a100 = nvidia_smi.parse_topology(fixture("a100-sxm-x8-17nic.topo.txt"))
    pix_or_pxb = {g: sorted(n for n, t in links.items() if t == "PXB") for g, links in a100["nic_affinity"].items()}
    assert pix_or_pxb["GPU4"] == ["mlx5_10", "mlx5_11", "mlx5_12", "mlx5_13"]
    h800 = nvidia_smi.parse_topology(fixture("h800-x8-4nic-pasted.topo.txt"))
    assert [h800["nic_affinity"][g]["mlx5_1"] for g in h800["gpus"]] == ["NODE", "NODE", "NODE", "PIX"] + ["SYS"] * 4
    assert [h800["numa_affinity"][g] for g in h800["gpus"]] == ["0"] * 4 + ["1"] * 4
    rtx = nvidia_smi.parse_topology(fixture("rtx4090-x8-2nic-tabs.topo.txt"))
    assert rtx["nic_affinity"]["GPU6"] == {"NIC0": "PHB", "NIC1": "PHB"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "printed nothing"),
        (None, "printed nothing"),
        (fixture("driver-unreachable.txt"), "no matrix header"),
        ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\n", "lacks a row for every GPU"),
        ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tfoo\t0-7\nGPU1\tNV4\t X \t0-7\n", "does not match its header"),
    ],
)
def test_parse_topology_rejects_bad_input(text, message):
    with pytest.raises(nvidia_smi.NvidiaSmiParseError, match=message):
        nvidia_smi.parse_topology(text)


def test_parse_topology_rejects_a_truncated_matrix():
    text = fixture("a100-sxm-x8-17nic.topo.txt")
    with pytest.raises(nvidia_smi.NvidiaSmiParseError):
        nvidia_smi.parse_topology(text[: text.index("GPU5    NV12") + 40])


# ---------------------------------------------------------------------------------------------------------------
# nvidia-smi nvlink -s

# (fixture, [(index, active, inactive)], speed of GPU's first link, finding codes)
NVLINKS = [
    ("a100-sxm4-80gb-x8.nvlink.txt", [(i, 12, 0) for i in range(8)], 25.0, []),
    ("h100-x8-first2.nvlink.txt", [(0, 18, 0), (1, 18, 0)], 26.562, []),
    ("h800-x8-excerpt.nvlink.txt", [(0, 8, 0), (1, 8, 0), (7, 8, 0)], 26.562, []),
    ("gb200-excerpt.nvlink.txt", [(0, 18, 0), (1, 2, 0)], 53.125, []),
    ("v100-sxm2-inactive.nvlink.txt", [(3, 4, 2)], 25.781, [("nvlink_down", "error", "3")]),
]


@pytest.mark.parametrize(("name", "counts", "speed", "expected"), NVLINKS, ids=str)
def test_parse_nvlink_status_reads_real_outputs(name, counts, speed, expected):
    gpus = nvidia_smi.parse_nvlink_status(fixture(name))
    assert [(g["index"], g["active"], g["inactive"]) for g in gpus] == counts
    assert gpus[0]["links"][0] == {"link": 0, "speed_gbps": speed, "active": True}
    assert codes(nvidia_smi.findings({"devices": []}, nvlink=gpus)) == expected


def test_an_inactive_link_names_the_link_and_the_gpu_bus_id():
    gpus = nvidia_smi.parse_nvlink_status(fixture("v100-sxm2-inactive.nvlink.txt"))
    assert gpus[0]["uuid"] == "..."
    assert gpus[0]["links"][3] == {"link": 3, "speed_gbps": None, "active": False}
    devices = [{"index": 3, "pci_bus_id": "00000000:3B:00.0"}]
    assert nvidia_smi._nvlink_findings(devices, gpus) == [
        {
            "severity": "error",
            "device": "00000000:3B:00.0",
            "code": "nvlink_down",
            "message": "GPU 3 (00000000:3B:00.0) has 4 of 6 NVLinks up; inactive: link 3, 5",
        }
    ]


def test_all_links_inactive_everywhere_is_a_pcie_board_not_a_fault():
    text = fixture("v100-sxm2-inactive.nvlink.txt").replace("25.781 GB/s", "<inactive>")
    gpus = nvidia_smi.parse_nvlink_status(text)
    assert (gpus[0]["active"], gpus[0]["inactive"]) == (0, 6)
    assert nvidia_smi.findings({"devices": []}, nvlink=gpus) == []


def test_parse_nvlink_status_of_nothing():
    assert nvidia_smi.parse_nvlink_status("") == []
    assert nvidia_smi.parse_nvlink_status(fixture("driver-unreachable.txt")) == []
    with pytest.raises(nvidia_smi.NvidiaSmiParseError):
        nvidia_smi.parse_nvlink_status(None)


# ---------------------------------------------------------------------------------------------------------------
# derived fixtures stay what their scripts make


@pytest.mark.parametrize("name", ["h100-sxm-x8-565", "h200-sxm-550", "h800-i0-525", "l40s-1gpu"])
def test_derived_xml_is_the_derivation_of_its_capture(name):
    derive = script("derive_xml").derive
    assert fixture(f"{name}.derived.xml") == derive(fixture(f"{name}.q.txt"), f"{name}.q.txt")


@pytest.mark.parametrize("name", sorted(script("variants").VARIANTS))
def test_variant_is_its_source_with_only_the_listed_changes(name):
    assert fixture(name) == script("variants").make(name)


@pytest.mark.parametrize(
    ("capture", "gpus", "mig", "other"),
    [
        ("nvidia-smi-L-a10-t4-x4-host.txt", 4, 0, []),
        ("nvidia-smi-L-a100-mig-1g10gb-in-pod.txt", 1, 7, []),
        ("nvidia-smi-L-a100-mig-1g20gb-x4.txt", 4, 4, []),
        ("nvidia-smi-L-a100-pcie-mig-3g40gb.txt", 1, 2, []),
        ("nvidia-smi-L-in-container-nvml-unknown-error.txt", 0, 0, ["Failed to initialize NVML: Unknown Error"]),
    ],
)
def test_gpu_list_captures(capture, gpus, mig, other):
    found = nvidia_smi.parse_gpu_list((FIXTURES.parent / "container" / capture).read_text())
    assert (len(found["gpus"]), len(found["mig"]), found["other"]) == (gpus, mig, other)
    assert all(g["uuid"].startswith("GPU-") for g in found["gpus"])
    assert all(m["uuid"].startswith("MIG-") and m["gpu"] == 0 for m in found["mig"])


def test_gpu_list_reads_names_uuids_and_mig_under_their_gpu():
    text = (FIXTURES.parent / "container" / "nvidia-smi-L-a10-t4-x4-host.txt").read_text()
    assert nvidia_smi.parse_gpu_list(text)["gpus"][2] == {
        "index": 2,
        "name": "Tesla T4",
        "uuid": "GPU-bf507abe-ec25-2053-5435-1c82511a3ae8",
    }
    # A MIG line before any GPU line belongs to none: it is not counted.
    assert nvidia_smi.parse_gpu_list("  MIG 1g.5gb  Device  0: (UUID: MIG-1)\n")["mig"] == []
