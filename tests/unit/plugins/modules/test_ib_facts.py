"""ib_facts through the module harness: sysfs trees and ibstat outputs from tests/fixtures/infiniband."""

from __future__ import annotations

import json

import pytest
from ib_trees import IBSTAT, derive_sysfs, ibstat, materialise

from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE
from ansible_collections.gpuops.bringup.plugins.modules import ib_facts

IBSTAT_PATH = "/usr/sbin/ibstat"
GPUD_SOME_DOWN = "gpud-h100-some-down-0.txt"


def ibstat_table(command_table, stdout="", stderr="", rc=0, installed=True):
    if not installed:
        return command_table({}, {})
    return command_table({"ibstat": IBSTAT_PATH}, {(IBSTAT_PATH,): (rc, stdout, stderr)})


def captured(name):
    """(rc, stdout, stderr) of a captured run: <name>.rc/.stdout/.stderr."""
    return (
        int((IBSTAT / f"{name}.rc").read_text()),
        (IBSTAT / f"{name}.stdout").read_text(),
        (IBSTAT / f"{name}.stderr").read_text(),
    )


def facts_of(result):
    return result["ansible_facts"]["infiniband"]


def test_sysfs_and_ibstat_together(run_module, command_table, tmp_path):
    text = ibstat(GPUD_SOME_DOWN)
    root = derive_sysfs(text, tmp_path / "sys")
    table = ibstat_table(command_table, stdout=text)
    result, failed = run_module(
        ib_facts.main,
        {
            "sysfs_root": str(root),
            "expected_active_ports": 8,
            "expected_rate_gbps": 400,
            "expected_link_layer": "InfiniBand",
        },
        table,
    )
    assert not failed
    assert set(result) == {"changed", "ansible_facts"}
    assert result["changed"] is False
    facts = facts_of(result)
    assert len(facts["devices"]) == 12
    assert facts["active_ports"] == 9
    assert facts["ibstat"] == {"ran": True, "rc": 0, "messages": []}
    first = facts["devices"][0]
    assert (first["name"], first["sources"], first["ports"][0]["rate_gbps"]) == ("mlx5_0", ["sysfs", "ibstat"], 400.0)
    assert [f["severity"] for f in facts["findings"]].count("error") == 0
    assert table.calls == [((IBSTAT_PATH,), C_LOCALE)]


def test_sysfs_only_when_ibstat_is_not_installed(run_module, command_table, tmp_path):
    root = materialise("procfs-class-ttar", tmp_path / "sys")
    result, failed = run_module(ib_facts.main, {"sysfs_root": str(root)}, ibstat_table(command_table, installed=False))
    assert not failed
    facts = facts_of(result)
    assert [d["name"] for d in facts["devices"]] == ["hfi1_0", "mlx4_0", "mlx5_0"]
    assert facts["ibstat"] == {"ran": False, "rc": None, "messages": []}
    assert facts["active_ports"] == 4


def test_ibstat_can_be_switched_off(run_module, command_table, tmp_path):
    root = materialise("stackhpc-cx7-edr-partial", tmp_path / "sys")
    # The table would fail the test if ibstat ran: it holds no command.
    result, _failed = run_module(ib_facts.main, {"sysfs_root": str(root), "ibstat": False}, command_table({}, {}))
    assert [d["name"] for d in facts_of(result)["devices"]] == ["mlx5_0", "mlx5_1"]


def test_a_failing_ibstat_is_a_finding(run_module, command_table, tmp_path):
    # Azure's ibstat stops at a device it cannot stat (issue thread); rc 255 is what an ibpanic exits with,
    # as the Debian 12 capture shows.
    root = materialise("stackhpc-cx7-edr-partial", tmp_path / "sys")
    stderr = (IBSTAT / "azhpc-diagnostics-59-ibstat-an0-ibpanic.stderr").read_text()
    table = ibstat_table(command_table, stderr=stderr, rc=255)
    result, failed = run_module(ib_facts.main, {"sysfs_root": str(root), "expected_active_ports": 2}, table)
    assert not failed
    facts = facts_of(result)
    assert facts["active_ports"] == 2
    assert facts["ibstat"]["rc"] == 255
    assert facts["findings"] == [
        {
            "severity": "warning",
            "code": "ibstat_failed",
            "device": None,
            "port": None,
            "message": "ibstat exited with 255: ibpanic: [8371] main: stat of IB device 'mlx5_an0' failed: "
            "No such file or directory",
        }
    ]


def test_a_host_without_rdma_devices(run_module, command_table, tmp_path):
    rc, out, err = captured("debian12-no-devices")
    table = ibstat_table(command_table, stdout=out, stderr=err, rc=rc)
    result, failed = run_module(ib_facts.main, {"sysfs_root": str(tmp_path)}, table)
    assert not failed
    assert facts_of(result) | {"simulated": None} == {
        "devices": [],
        "findings": [],
        "active_ports": 0,
        "ibstat": {"ran": True, "rc": 0, "messages": []},
        "simulated": None,
    }


def test_a_host_without_rdma_devices_where_ports_are_expected(run_module, command_table, tmp_path):
    rc, out, err = captured("debian12-no-devices")
    table = ibstat_table(command_table, stdout=out, stderr=err, rc=rc)
    result, _failed = run_module(ib_facts.main, {"sysfs_root": str(tmp_path), "expected_active_ports": 8}, table)
    assert [(f["severity"], f["code"]) for f in facts_of(result)["findings"]] == [("error", "no_devices")]


def test_garbage_from_ibstat_adds_nothing(run_module, command_table, tmp_path):
    root = materialise("stackhpc-cx7-edr-partial", tmp_path / "sys")
    table = ibstat_table(command_table, stdout="Segmentation fault\n\x00\x01binary", rc=0)
    result, failed = run_module(ib_facts.main, {"sysfs_root": str(root)}, table)
    assert not failed
    assert [d["sources"] for d in facts_of(result)["devices"]] == [["sysfs"], ["sysfs"]]


def test_check_mode_reads_the_same(run_module, command_table, tmp_path):
    root = materialise("imbue-h100-ibdev2netdev", tmp_path / "sys")
    args = {"sysfs_root": str(root), "ibstat": False}
    normal, _failed = run_module(ib_facts.main, args, command_table({}, {}))
    checked, _failed = run_module(ib_facts.main, args, command_table({}, {}), check_mode=True)
    assert normal == checked
    assert facts_of(checked)["devices"][0]["ports"][0]["netdev"] == "ibp26s0"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"expected_active_ports": -1}, "expected_active_ports must be 0 or more, got -1"),
        ({"expected_link_layer": "IB"}, "value of expected_link_layer must be one of: InfiniBand, Ethernet, got: IB"),
        ({"expected_rate_gbps": "fast"}, "argument 'expected_rate_gbps' is of type"),
        ({"sysfs": "/sys"}, "Unsupported parameters for"),
        ({"sysfs_root": "/nonexistent/sys"}, "sysfs_root /nonexistent/sys is not a directory"),
    ],
)
def test_bad_input(run_module, command_table, args, message):
    result, failed = run_module(ib_facts.main, {"ibstat": False, **args}, command_table({}, {}))
    assert failed
    assert message in result["msg"]


def test_simulated_marker_is_reported(command_table, tmp_path):
    marker = {"profile": "hgx-h100-8gpu", "captures": ["tests/fixtures/infiniband/ibstat/gpud-h100-some-down-0.txt"]}
    params = {
        "sysfs_root": str(tmp_path),
        "ibstat": False,
        "expected_active_ports": None,
        "expected_rate_gbps": None,
        "expected_link_layer": None,
    }
    facts = ib_facts.gather(command_table({}, {}), params, read_marker=lambda _path: json.dumps(marker))
    assert facts["simulated"] == marker
    assert ib_facts.gather(command_table({}, {}), params, read_marker=lambda _path: None)["simulated"] is False
