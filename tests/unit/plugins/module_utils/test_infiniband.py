"""InfiniBand parsers over captured ibstat outputs and sysfs trees (tests/fixtures/infiniband; see SOURCES.md)."""

from __future__ import annotations

import importlib.util

import pytest
from ib_trees import IBSTAT, SYSFS, derive_sysfs, ibstat, materialise

from ansible_collections.gpuops.bringup.plugins.module_utils import infiniband

GPUD_SOME_DOWN = "gpud-h100-some-down-0.txt"
GPUD_ROCE_POLLING = "gpud-h100-roce-some-down-with-polling-1.txt"
GPUD_BLUEFIELD = "gpud-h100-ib-bluefield3-all-active-2.txt"
NCCL_TESTS_350 = "nccl-tests-350-cx4lx-roce-cx6-hdr.txt"
VF_DOWN = "network-operator-249-vf-down-linkup.txt"
AZURE_FLAT = "azhpc-diagnostics-59-ibstat-mlx5_ib0-initializing.txt"
# Derived by tests/fixtures/infiniband/ibstat/variants.py (SOURCES.md says how).
MLX5_4_DOWN = "gpud-h100-ib-bluefield3-mlx5_4-down.derived.txt"
ROCE_2PORT = "gpud-h100-roce-2port.derived.txt"


def port(devices, name, number=1):
    device = next(d for d in devices if d["name"] == name)
    return next(p for p in device["ports"] if p["port"] == number)


def device(devices, name):
    return next(d for d in devices if d["name"] == name)


def summary(devices):
    """(device count, active ports per link layer) of a parse."""
    active = {}
    for d in devices:
        for p in d["ports"]:
            if p["state"] == "active":
                active[p["link_layer"]] = active.get(p["link_layer"], 0) + 1
    return len(devices), active


IBSTAT_CASES = {
    # 8 ConnectX-7 on NDR InfiniBand, a ConnectX-6 Dx pair for Ethernet, three of its ports disabled.
    GPUD_SOME_DOWN: (12, {"InfiniBand": 8, "Ethernet": 1}),
    # RoCE only: 400G ConnectX-7 and 100G ConnectX-6 Dx, one port polling for a partner, one disabled.
    GPUD_ROCE_POLLING: (12, {"Ethernet": 10}),
    # NDR InfiniBand plus a BlueField-3 bond on Ethernet; ibstat indented with spaces here.
    GPUD_BLUEFIELD: (9, {"InfiniBand": 8, "Ethernet": 1}),
    NCCL_TESTS_350: (4, {"Ethernet": 1, "InfiniBand": 1}),
    VF_DOWN: (1, {}),
    # A copy that lost its indentation: keys are still read by name.
    AZURE_FLAT: (1, {}),
    # Debian 12 with rdma-core 44 and no RDMA device: ibstat prints nothing and exits 0.
    "debian12-no-devices.stdout": (0, {}),
    # The BlueField-3 node with one NDR port that lost its link: 7 of 8 InfiniBand ports active.
    MLX5_4_DOWN: (9, {"InfiniBand": 7, "Ethernet": 1}),
    # A 2-port RoCE node: two 400G ConnectX-7 on Ethernet.
    ROCE_2PORT: (2, {"Ethernet": 2}),
}


@pytest.mark.parametrize(("name", "expected"), list(IBSTAT_CASES.items()), ids=list(IBSTAT_CASES))
def test_parse_ibstat_devices_and_active_ports(name, expected):
    parsed = infiniband.parse_ibstat(ibstat(name))
    assert summary(parsed["devices"]) == expected
    assert parsed["messages"] == []


@pytest.mark.parametrize(
    ("name", "ca", "number", "expected"),
    [
        (
            GPUD_SOME_DOWN,
            "mlx5_0",
            1,
            {
                "port": 1,
                "state": "active",
                "physical_state": "link_up",
                "rate_gbps": 400.0,
                "link_layer": "InfiniBand",
                "netdev": None,
                "lid": 75,
                "sm_lid": 334,
                "port_guid": "0x946dae0300cde72c",
            },
        ),
        (
            GPUD_SOME_DOWN,
            "mlx5_2",
            1,
            {"state": "down", "physical_state": "disabled", "rate_gbps": 40.0, "link_layer": "Ethernet", "lid": 0},
        ),
        (GPUD_ROCE_POLLING, "mlx5_11", 1, {"state": "down", "physical_state": "polling", "port_guid": "0x" + "0" * 16}),
        (GPUD_BLUEFIELD, "mlx5_bond_0", 1, {"state": "active", "rate_gbps": 200.0, "link_layer": "Ethernet"}),
        (NCCL_TESTS_350, "mlx5_0", 1, {"state": "active", "rate_gbps": 25.0, "link_layer": "Ethernet"}),
        (NCCL_TESTS_350, "mlx5_3", 1, {"state": "down", "physical_state": "disabled", "rate_gbps": 10.0, "lid": 65535}),
        (VF_DOWN, "mlx5_7", 1, {"state": "down", "physical_state": "link_up", "rate_gbps": 200.0, "sm_lid": 1}),
        (AZURE_FLAT, "mlx5_ib0", 1, {"state": "init", "physical_state": "link_up", "lid": 65535, "sm_lid": 361}),
        (
            MLX5_4_DOWN,
            "mlx5_4",
            1,
            {"state": "down", "physical_state": "polling", "rate_gbps": 10.0, "link_layer": "InfiniBand", "lid": 972},
        ),
        (MLX5_4_DOWN, "mlx5_5", 1, {"state": "active", "physical_state": "link_up", "rate_gbps": 400.0}),
        (ROCE_2PORT, "mlx5_3", 1, {"state": "active", "rate_gbps": 400.0, "link_layer": "Ethernet"}),
    ],
)
def test_parse_ibstat_port_fields(name, ca, number, expected):
    parsed = port(infiniband.parse_ibstat(ibstat(name))["devices"], ca, number)
    assert {key: parsed[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("name", "ca", "expected"),
    [
        (
            GPUD_SOME_DOWN,
            "mlx5_0",
            {"ca_type": "MT4129", "fw_version": "28.39.1002", "node_guid": "0x946dae0300cde72c"},
        ),
        (GPUD_SOME_DOWN, "mlx5_1", {"ca_type": "MT4125", "fw_version": "22.38.1002"}),
        (GPUD_BLUEFIELD, "mlx5_bond_0", {"ca_type": "MT41692", "fw_version": "32.38.3056"}),
        (AZURE_FLAT, "mlx5_ib0", {"ca_type": "MT4124", "node_guid": "0x00155dfffe34072b"}),
    ],
)
def test_parse_ibstat_device_fields(name, ca, expected):
    parsed = device(infiniband.parse_ibstat(ibstat(name))["devices"], ca)
    assert {key: parsed[key] for key in expected} == expected
    assert parsed["sources"] == ["ibstat"]


def test_parse_ibstat_sorts_nothing_and_keeps_its_order():
    names = [d["name"] for d in infiniband.parse_ibstat(ibstat(GPUD_SOME_DOWN))["devices"]]
    assert names[:3] == ["mlx5_0", "mlx5_1", "mlx5_10"]


@pytest.mark.parametrize(
    ("name", "messages"),
    [
        # `ibstat mlx5_0` on Debian 12 without the device (captured, rc 255).
        ("debian12-mlx5_0-missing.stderr", ["ibpanic: [484] main: 'mlx5_0' IB device can't be found: Success"]),
        # Azure: one device ibstat cannot stat ends the whole listing.
        (
            "azhpc-diagnostics-59-ibstat-an0-ibpanic.stderr",
            ["ibpanic: [8371] main: stat of IB device 'mlx5_an0' failed: No such file or directory"],
        ),
    ],
)
def test_parse_ibstat_keeps_ibpanic_lines(name, messages):
    assert infiniband.parse_ibstat(ibstat(name)) == {"devices": [], "messages": messages}


@pytest.mark.parametrize("text", ["", None, "\n\n", "CA type: MT4129\nPort 1:\n State: Active\n"])
def test_parse_ibstat_of_nothing_or_fields_without_a_ca(text):
    assert infiniband.parse_ibstat(text) == {"devices": [], "messages": []}


def test_parse_ibstat_of_other_output_finds_nothing():
    # Real output of another tool (nccl-tests) must not turn into devices.
    other = (SYSFS.parents[1] / "nccl" / "nccl-tests-290-all_reduce-h100-8gpu-single-node.txt").read_text()
    assert infiniband.parse_ibstat(other) == {"devices": [], "messages": []}


def test_parse_ibstat_truncated_mid_port():
    # The first CA of a capture cut after its rate line: what was printed is kept, the rest stays unknown.
    text = "\n".join(ibstat(GPUD_SOME_DOWN).splitlines()[:11])
    parsed = infiniband.parse_ibstat(text)["devices"]
    assert [d["name"] for d in parsed] == ["mlx5_0"]
    assert port(parsed, "mlx5_0") | {} == {
        "port": 1,
        "state": "active",
        "physical_state": "link_up",
        "rate_gbps": 400.0,
        "link_layer": None,
        "netdev": None,
        "lid": None,
        "sm_lid": None,
        "port_guid": None,
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4: ACTIVE\n", "active"),
        ("1: DOWN", "down"),
        ("2: INIT", "init"),
        ("Initializing", "init"),
        ("Active", "active"),
        ("5: ACTIVE_DEFER", "active_defer"),
        ("", None),
        (None, None),
        ("9: SOMETHING NEW", "something_new"),
    ],
)
def test_parse_state(text, expected):
    assert infiniband.parse_state(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5: LinkUp\n", "link_up"),
        ("LinkUp", "link_up"),
        ("2: Polling", "polling"),
        ("3: Disabled", "disabled"),
        ("7: Phy Test", "phy_test"),
        ("PhyTest", "phy_test"),
        ("4: PortConfigurationTraining", "port_configuration_training"),
        # prometheus/procfs's fixture writes a port state here; it is reported as the file says.
        ("4: ACTIVE\n", "active"),
        (None, None),
    ],
)
def test_parse_physical_state(text, expected):
    assert infiniband.parse_physical_state(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("400 Gb/sec (4X NDR)\n", 400.0),
        ("200 Gb/sec (2X NDR)", 200.0),
        ("25 Gb/sec (1X EDR)\n", 25.0),
        ("40 Gb/sec (4X QDR)", 40.0),
        ("400", 400.0),
        ("2.5 Gb/sec (1X SDR)", 2.5),
        ("", None),
        ("fast", None),
        ("Gb/sec", None),
        (None, None),
    ],
)
def test_parse_rate(text, expected):
    assert infiniband.parse_rate(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0a7f:bc12:45ef:d23b", "0x0a7fbc1245efd23b"),
        ("946d:ae03:00cd:e72c\n", "0x946dae0300cde72c"),
        ("0x946dae0300cde72c", "0x946dae0300cde72c"),
        ("0x0000000000000000", "0x0000000000000000"),
        ("not a guid", None),
        (None, None),
    ],
)
def test_normalize_guid(text, expected):
    assert infiniband.normalize_guid(text) == expected


def test_read_sysfs_procfs_tree(tmp_path):
    devices = infiniband.read_sysfs(infiniband.SysfsReader(materialise("procfs-class-ttar", tmp_path / "sys")))
    assert [d["name"] for d in devices] == ["hfi1_0", "mlx4_0", "mlx5_0"]
    assert device(devices, "hfi1_0") | {"ports": None} == {
        "name": "hfi1_0",
        "ca_type": None,
        "fw_version": "1.27.0",
        "node_guid": None,
        "board_id": "HPE 100Gb 1-port OP101 QSFP28 x16 PCIe Gen3 with Intel Omni-Path Adapter",
        "ports": None,
        "sources": ["sysfs"],
    }
    assert port(devices, "hfi1_0") == {
        "port": 1,
        "state": "active",
        "physical_state": "link_up",
        "rate_gbps": 100.0,
        "link_layer": "InfiniBand",
        "netdev": None,
        "lid": None,
        "sm_lid": None,
        "port_guid": None,
    }
    # Two ports; the second link_layer file ends in a blank line.
    assert [p["port"] for p in device(devices, "mlx4_0")["ports"]] == [1, 2]
    assert port(devices, "mlx4_0", 2)["link_layer"] == "InfiniBand"
    assert port(devices, "mlx4_0", 2)["rate_gbps"] == 40.0
    # node_guid without a trailing newline.
    assert device(devices, "mlx5_0")["node_guid"] == "0x0a7fbc1245efd23b"
    assert port(devices, "mlx5_0")["rate_gbps"] == 25.0
    assert port(devices, "mlx5_0")["physical_state"] == "active"


def test_read_sysfs_partial_tree(tmp_path):
    # Only state, rate and phys_state were captured: the rest is unknown, not guessed.
    devices = infiniband.read_sysfs(infiniband.SysfsReader(materialise("stackhpc-cx7-edr-partial", tmp_path / "s")))
    assert [(d["name"], d["fw_version"]) for d in devices] == [("mlx5_0", None), ("mlx5_1", None)]
    assert [(p["state"], p["physical_state"], p["rate_gbps"], p["link_layer"]) for p in devices[0]["ports"]] == [
        ("active", "link_up", 100.0, None)
    ]


def test_read_sysfs_netdevs_from_device_net(tmp_path):
    devices = infiniband.read_sysfs(infiniband.SysfsReader(materialise("imbue-h100-ibdev2netdev", tmp_path / "s")))
    assert [d["name"] for d in devices] == [f"mlx5_{i}" for i in range(12)]
    assert {d["name"]: d["ports"][0]["netdev"] for d in devices} == {
        "mlx5_0": "ibp26s0",
        "mlx5_1": "enp27s0f0np0",
        "mlx5_2": "enp27s0f1np1",
        "mlx5_3": "ibp60s0",
        "mlx5_4": "ibp77s0",
        "mlx5_5": "ibp94s0",
        "mlx5_6": "ibp156s0",
        "mlx5_7": "enp157s0f0np0",
        "mlx5_8": "enp157s0f1np1",
        "mlx5_9": "ibp188s0",
        "mlx5_10": "ibp204s0",
        "mlx5_11": "ibp220s0",
    }


def test_read_sysfs_netdev_of_a_dual_port_adapter(tmp_path):
    # Layout only (no capture): a GID table netdev wins; otherwise dev_port (0-based) picks the port's interface.
    base = tmp_path / "class" / "infiniband" / "mlx4_0"
    for number in (1, 2):
        (base / "ports" / str(number)).mkdir(parents=True)
    for name, dev_port in (("ens1", "0"), ("ens1d1", "1")):
        (base / "device" / "net" / name).mkdir(parents=True)
        (base / "device" / "net" / name / "dev_port").write_text(dev_port + "\n")
    devices = infiniband.read_sysfs(infiniband.SysfsReader(tmp_path))
    assert [p["netdev"] for p in devices[0]["ports"]] == ["ens1", "ens1d1"]
    (base / "ports" / "2" / "gid_attrs" / "ndevs").mkdir(parents=True)
    (base / "ports" / "2" / "gid_attrs" / "ndevs" / "0").write_text("vlan42\n")
    devices = infiniband.read_sysfs(infiniband.SysfsReader(tmp_path))
    assert [p["netdev"] for p in devices[0]["ports"]] == ["ens1", "vlan42"]


def test_read_sysfs_without_infiniband_class(tmp_path):
    assert infiniband.read_sysfs(infiniband.SysfsReader(tmp_path)) == []
    assert infiniband.read_sysfs(infiniband.SysfsReader(tmp_path / "missing")) == []


def test_derived_sysfs_reads_back_as_ibstat_said(tmp_path):
    # The derivation itself is checked: everything but the rate (left out) survives the round trip.
    text = ibstat(GPUD_SOME_DOWN)
    sysfs = infiniband.read_sysfs(infiniband.SysfsReader(derive_sysfs(text, tmp_path)))
    from_ibstat = infiniband.parse_ibstat(text)["devices"]
    for ours, theirs in zip(sysfs, sorted(from_ibstat, key=lambda d: infiniband._sort_key(d["name"])), strict=True):
        assert ours["name"] == theirs["name"]
        assert (ours["fw_version"], ours["node_guid"], ours["ca_type"]) == (
            theirs["fw_version"],
            theirs["node_guid"],
            theirs["ca_type"],
        )
        assert [(p["state"], p["physical_state"], p["link_layer"]) for p in ours["ports"]] == [
            (p["state"], p["physical_state"], p["link_layer"]) for p in theirs["ports"]
        ]
        assert {p["rate_gbps"] for p in ours["ports"]} == {None}


def test_merge_fills_what_sysfs_lacks(tmp_path):
    text = ibstat(GPUD_SOME_DOWN)
    sysfs = infiniband.read_sysfs(infiniband.SysfsReader(derive_sysfs(text, tmp_path)))
    merged = infiniband.merge(sysfs, infiniband.parse_ibstat(text)["devices"])
    assert [d["name"] for d in merged][:4] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert {d["sources"] == ["sysfs", "ibstat"] for d in merged} == {True}
    assert port(merged, "mlx5_0")["rate_gbps"] == 400.0
    assert port(merged, "mlx5_0")["lid"] == 75


def test_merge_prefers_sysfs(tmp_path):
    # sysfs (derived, so sysfs == ibstat) edited to say the port went down after ibstat ran: sysfs wins.
    text = ibstat(GPUD_SOME_DOWN)
    root = derive_sysfs(text, tmp_path)
    (root / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "state").write_text("1: DOWN\n")
    merged = infiniband.merge(
        infiniband.read_sysfs(infiniband.SysfsReader(root)), infiniband.parse_ibstat(text)["devices"]
    )
    assert port(merged, "mlx5_0")["state"] == "down"


def test_merge_keeps_devices_and_ports_only_one_side_has(tmp_path):
    sysfs = infiniband.read_sysfs(infiniband.SysfsReader(materialise("procfs-class-ttar", tmp_path / "s")))
    merged = infiniband.merge(sysfs, infiniband.parse_ibstat(ibstat(NCCL_TESTS_350))["devices"])
    assert [d["name"] for d in merged] == ["hfi1_0", "mlx4_0", "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    # mlx5_0 is in both: sysfs's InfiniBand port and 25 Gb/s rate stay, ibstat adds its port GUID.
    assert port(merged, "mlx5_0")["link_layer"] == "InfiniBand"
    assert port(merged, "mlx5_0")["port_guid"] == "0xbacef6fffecee2b8"
    assert device(merged, "mlx5_3")["sources"] == ["ibstat"]


def codes(found, severity=None):
    return sorted((f["code"], f["device"], f["port"]) for f in found if severity is None or f["severity"] == severity)


def test_findings_eight_ndr_ports_met():
    devices = infiniband.parse_ibstat(ibstat(GPUD_SOME_DOWN))["devices"]
    found = infiniband.findings(devices, 8, 400, "InfiniBand")
    assert codes(found, "error") == []
    assert codes(found, "warning") == []
    assert codes(found, "info") == [
        ("link_layer_mismatch", "mlx5_1", 1),
        ("port_disabled", "mlx5_2", 1),
        ("port_disabled", "mlx5_7", 1),
        ("port_disabled", "mlx5_8", 1),
    ]


@pytest.mark.parametrize(
    ("name", "expectations", "errors"),
    [
        (GPUD_SOME_DOWN, (9, None, "InfiniBand"), [("active_ports_low", None, None)]),
        (GPUD_SOME_DOWN, (None, 800, "InfiniBand"), [("rate_low", f"mlx5_{i}", 1) for i in (0, 10, 11, 3, 4, 5, 6, 9)]),
        # RoCE host: the 100G ports of the ConnectX-6 Dx are counted as Ethernet and are too slow for 400.
        (
            GPUD_ROCE_POLLING,
            (8, 400, "Ethernet"),
            [("rate_low", f"mlx5_{i}", 1) for i in (1, 2, 7, 8)],
        ),
        # The same host expected on InfiniBand: nothing counts.
        (GPUD_ROCE_POLLING, (8, 400, "InfiniBand"), [("active_ports_low", None, None)]),
        # No expectation: no error, whatever the ports say.
        (GPUD_ROCE_POLLING, (None, None, None), []),
        (NCCL_TESTS_350, (1, 200, "InfiniBand"), []),
        (NCCL_TESTS_350, (2, 200, "InfiniBand"), [("active_ports_low", None, None)]),
        # One NDR port down: an 8-port expectation fails, 7 are met.
        (MLX5_4_DOWN, (8, 400, "InfiniBand"), [("active_ports_low", None, None)]),
        (MLX5_4_DOWN, (7, 400, "InfiniBand"), []),
        (ROCE_2PORT, (2, 400, "Ethernet"), []),
        (ROCE_2PORT, (3, 400, "Ethernet"), [("active_ports_low", None, None)]),
        (ROCE_2PORT, (2, 400, "InfiniBand"), [("active_ports_low", None, None)]),
    ],
)
def test_findings_errors(name, expectations, errors):
    devices = infiniband.parse_ibstat(ibstat(name))["devices"]
    assert codes(infiniband.findings(devices, *expectations), "error") == sorted(errors)


@pytest.mark.parametrize(
    ("name", "warnings"),
    [
        (GPUD_ROCE_POLLING, [("port_polling", "mlx5_11", 1)]),
        (VF_DOWN, [("port_not_active", "mlx5_7", 1)]),
        (AZURE_FLAT, [("port_not_active", "mlx5_ib0", 1)]),
        (GPUD_BLUEFIELD, []),
        (MLX5_4_DOWN, [("port_polling", "mlx5_4", 1)]),
        (ROCE_2PORT, []),
    ],
)
def test_findings_warnings(name, warnings):
    devices = infiniband.parse_ibstat(ibstat(name))["devices"]
    assert codes(infiniband.findings(devices), "warning") == warnings


def test_findings_messages_name_the_port_and_the_fix():
    devices = infiniband.parse_ibstat(ibstat(VF_DOWN))["devices"]
    (found,) = infiniband.findings(devices)
    assert found["message"] == "mlx5_7 port 1 has a physical link but is down: no subnet manager has brought it up"
    devices = infiniband.parse_ibstat(ibstat(GPUD_ROCE_POLLING))["devices"]
    low = [f for f in infiniband.findings(devices, 12, 400, "Ethernet") if f["severity"] == "error"]
    assert low[0]["message"] == "mlx5_1 port 1 runs at 100 Gb/s, expected at least 400 Gb/s"
    assert low[-1]["message"].startswith("10 active Ethernet port(s) found, expected 12: mlx5_0/1, mlx5_1/1,")


@pytest.mark.parametrize(
    ("expected_ports", "result"),
    [
        (None, []),
        (0, []),
        (8, [("error", "no_devices", "no RDMA devices found, expected 8: none")]),
    ],
)
def test_findings_without_devices(expected_ports, result):
    found = infiniband.findings([], expected_ports, 400, "InfiniBand")
    assert [(f["severity"], f["code"], f["message"]) for f in found] == result


def test_findings_unknown_rate_is_low(tmp_path):
    derive_sysfs(ibstat(VF_DOWN), tmp_path)
    # Bring the VF up in the derived tree: active without a rate file.
    (tmp_path / "class" / "infiniband" / "mlx5_7" / "ports" / "1" / "state").write_text("4: ACTIVE\n")
    devices = infiniband.read_sysfs(infiniband.SysfsReader(tmp_path))
    (found,) = infiniband.findings(devices, 1, 200, "InfiniBand")
    assert (found["code"], found["message"]) == (
        "rate_low",
        "mlx5_7 port 1 reports no rate, expected at least 200 Gb/s",
    )


def test_active_ports_counts_per_link_layer():
    devices = infiniband.parse_ibstat(ibstat(GPUD_SOME_DOWN))["devices"]
    assert infiniband.active_ports(devices) == 9
    assert infiniband.active_ports(devices, "InfiniBand") == 8
    assert infiniband.active_ports(devices, "Ethernet") == 1


def test_a_two_port_roce_node_meets_its_expectation_without_remarks():
    devices = infiniband.parse_ibstat(ibstat(ROCE_2PORT))["devices"]
    assert [d["name"] for d in devices] == ["mlx5_0", "mlx5_3"]
    assert infiniband.findings(devices, 2, 400, "Ethernet") == []


def ibstat_variants():
    spec = importlib.util.spec_from_file_location("ibstat_variants", IBSTAT / "variants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(ibstat_variants().VARIANTS))
def test_derived_ibstat_is_its_source_with_only_the_listed_changes(name):
    assert ibstat(name) == ibstat_variants().make(name)


def test_derived_ibstat_lines_are_lines_of_the_source():
    # Every line of a derived output is a line of its capture, except the three the mlx5_4 variant sets.
    variants = ibstat_variants().VARIANTS
    for name, (source, _operation) in variants.items():
        captured = set(ibstat(source).splitlines())
        extra = [line.strip() for line in ibstat(name).splitlines() if line not in captured]
        assert extra == (["State: Down", "Physical state: Polling", "Rate: 10"] if name == MLX5_4_DOWN else [])


def test_rdma_link_names_each_roce_ports_interface():
    """`rdma link show` on two ConnectX-6 Dx ports (each line ends with a blank, as iproute2 prints it)."""
    links = infiniband.parse_rdma_link(IBSTAT.parent.joinpath("rdma-link", "3fs-pr283-cx6dx-2port.txt").read_text())
    assert links == {
        "mlx5_0/1": {"state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "p1p1"},
        "mlx5_1/1": {"state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "p1p2"},
    }


def test_rdma_link_of_an_infiniband_port_has_no_interface():
    links = infiniband.parse_rdma_link(IBSTAT.parent.joinpath("rdma-link", "rccl-1423-ib-active.txt").read_text())
    assert links == {"mlx5_7/1": {"state": "ACTIVE", "physical_state": "LINK_UP", "netdev": None}}


def test_rdma_link_ignores_other_lines_and_keeps_the_first_of_a_port():
    text = ("error: no such device\nlink mlx5_0/01 state DOWN netdev a\nlink mlx5_0/1 state ACTIVE netdev b\n"
            "link /1 state ACTIVE\nlink mlx5_2/x state ACTIVE\nlink mlx5_3/1\n")  # fmt: skip
    assert infiniband.parse_rdma_link(text) == {
        "mlx5_0/1": {"state": "DOWN", "physical_state": None, "netdev": "a"},
    }


@pytest.mark.parametrize(
    ("name", "found"),
    [
        (AZURE_FLAT, [("warning", "port_not_active",
                       "mlx5_ib0 port 1 has a physical link but is init: no subnet manager has brought it up")]),
        (MLX5_4_DOWN, [("warning", "port_polling", "mlx5_4 port 1 is down and polling: no link partner (cable, "
                        "transceiver or switch port)"),
                       ("info", "link_layer_mismatch", "mlx5_bond_0 port 1 is active on Ethernet, expected InfiniBand; "
                        "not counted")]),
        (NCCL_TESTS_350, [("info", "link_layer_mismatch", "mlx5_0 port 1 is active on Ethernet, expected InfiniBand; "
                           "not counted"), ("info", "port_disabled", "mlx5_1 port 1 is disabled"),
                          ("info", "port_disabled", "mlx5_3 port 1 is disabled")]),
    ],
)  # fmt: skip
def test_findings_messages_of_the_captures(name, found):
    devices = infiniband.parse_ibstat(ibstat(name))["devices"]
    result = infiniband.findings(devices, None, None, "InfiniBand")
    assert [(f["severity"], f["code"], f["message"]) for f in result] == found


def mlx5_4(**changes):
    """The derived NDR node's devices with mlx5_4's port 1 changed (states as the parsers spell them)."""
    devices = infiniband.parse_ibstat(ibstat(MLX5_4_DOWN))["devices"]
    device(devices, "mlx5_4")["ports"][0].update(changes)
    return devices


@pytest.mark.parametrize(
    ("changes", "code", "message"),
    [
        # A physical state none of the others: Sleep (a port the SM put to sleep), or none reported.
        ({"physical_state": "sleep"}, "port_down", "mlx5_4 port 1 is down (physical state sleep)"),
        ({"physical_state": None, "state": None}, "port_down",
         "mlx5_4 port 1 is in an unknown state (physical state unknown)"),
        ({"state": None}, "port_polling",
         "mlx5_4 port 1 is not active and polling: no link partner (cable, transceiver or switch port)"),
        ({"physical_state": "link_up", "state": None}, "port_not_active",
         "mlx5_4 port 1 has a physical link but is in an unknown state: no subnet manager has brought it up"),
        # Ethernet has no subnet manager.
        ({"physical_state": "link_up", "link_layer": "Ethernet"}, "port_not_active",
         "mlx5_4 port 1 has a physical link but is down: see its link"),
    ],
)  # fmt: skip
def test_findings_of_each_port_state(changes, code, message):
    (found,) = infiniband.findings(mlx5_4(**changes))
    assert (found["severity"], found["code"], found["device"], found["port"], found["message"]) == (
        "warning", code, "mlx5_4", 1, message)  # fmt: skip


def test_a_port_of_another_network_does_not_hide_the_next_port():
    devices = mlx5_4()
    first = device(devices, "mlx5_0")
    first["ports"] = [{**first["ports"][0], "port": 2, "link_layer": "Ethernet"}, first["ports"][0]]
    found = infiniband.findings(devices, 8, None, "InfiniBand")
    assert codes(found) == [("active_ports_low", None, None), ("link_layer_mismatch", "mlx5_0", 2),
                            ("link_layer_mismatch", "mlx5_bond_0", 1), ("port_polling", "mlx5_4", 1)]  # fmt: skip
    assert found[-1]["message"].startswith("7 active InfiniBand port(s) found, expected 8: mlx5_0/1, ")


def test_active_ports_of_any_link_layer():
    found = infiniband.findings(mlx5_4(), 9)
    assert found[-1]["message"].startswith("8 active port(s) found, expected 9: mlx5_0/1, ")


PERFQUERY = IBSTAT.parent / "perfquery"


def perfquery(name):
    return infiniband.parse_perfquery((PERFQUERY / name).read_text(errors="replace"))


@pytest.mark.parametrize(
    ("name", "header", "errors", "messages"),
    [
        ("treydock-hca-edr-lid133.txt", (133, 1, True), (0, 0, 0, 0), []),
        ("treydock-hca-edr-lid133-symbol-errors.derived.txt", (133, 1, True), (37, 0, 0, 0), []),
        ("treydock-switch-edr-lid2052-errors.txt", (2052, 1, True), (0, 1, 20046, 41864608), []),
        # Two ports' blocks: the first port's is read.
        ("treydock-switch-edr-lid1719-2ports.txt", (1719, 1, True), (0, 0, 0, 22730501), []),
        ("infiniband-diags-16-rhel75-zero.txt", (10, 1, True), (0, 0, 0, 0), []),
        ("debian12-mlx5_0-missing.stdout", (None, None, False), None,
         ["perfquery: iberror: failed: Failed to open 'mlx5_0' port '1'"]),
        ("infiniband_exporter-26-client-register.stderr", (None, None, False), None,
         ["ibwarn: [299010] mad_rpc_open_port: client_register for mgmt 1 failed",
          "perfquery: iberror: failed: Failed to open '(null)' port '0'"]),
    ],
)  # fmt: skip
def test_perfquery_of_the_captures(name, header, errors, messages):
    found = perfquery(name)
    assert (found["lid"], found["port"], found["extended"]) == header
    counters = found["counters"]
    names = ("symbol_error", "link_downed", "port_xmit_discards", "port_xmit_wait")
    assert (tuple(counters[n] for n in names) if counters else None) == errors
    assert (found["saturated"], found["messages"]) == ([], messages)


def test_perfquery_messages_do_not_end_the_read():
    names = ("debian12-mlx5_0-missing.stderr", "treydock-hca-edr-lid133.txt")
    text = "".join((PERFQUERY / n).read_text() for n in names)
    found = infiniband.parse_perfquery(text)
    assert (found["lid"], len(found["messages"]), found["counters"]["port_rcv_packets"]) == (133, 2, 100583719365)


@pytest.mark.parametrize(
    ("value", "saturated"), [("65534", []), ("65535", ["symbol_error"])]
)  # fmt: skip
def test_a_16_bit_counter_at_its_maximum_is_saturated(value, saturated):
    """The lid133 capture as perfquery prints it without -x (the header of PortCounters), its SymbolErrorCounter set
    to value: a counter that stopped at its maximum can no longer show a rise."""
    text = (PERFQUERY / "treydock-hca-edr-lid133.txt").read_text()
    text = text.replace("# Port extended counters:", "# Port counters:")
    text = text.replace("SymbolErrorCounter:..............0", f"SymbolErrorCounter:..............{value}")
    found = infiniband.parse_perfquery(text)
    # (Its data counters, 64-bit figures, read as saturated 32-bit ones: this edit's doing.)
    assert (found["extended"], found["counters"]["symbol_error"]) == (False, int(value))
    assert [n for n in found["saturated"] if n == "symbol_error"] == saturated
    extended = infiniband.parse_perfquery(text.replace("# Port counters:", "# Port extended counters:"))
    assert extended["saturated"] == []
