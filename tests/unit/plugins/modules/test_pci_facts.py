"""pci_facts' main() over real lspci outputs and sysfs captures (tests/fixtures/pci, sources in SOURCES.md).

The command table answers lspci -Dnn with a capture; a command the table does
not hold fails the test, so a case also proves which commands ran (none, on
the sysfs path).
"""

from __future__ import annotations

import pytest
import yaml
from pci_trees import derive_sysfs, fixture, materialise_grep

from ansible_collections.gpuops.bringup.plugins.module_utils.command import C_LOCALE
from ansible_collections.gpuops.bringup.plugins.modules import pci_facts

LSPCI = "/usr/bin/lspci"
TOOLS = {"lspci": LSPCI}
COMMAND = (LSPCI, "-Dnn")


def run(run_module, command_table, outputs, tools=None, check_mode=False, **args):
    table = command_table(TOOLS if tools is None else tools, outputs)
    result, failed = run_module(pci_facts.main, args, table, check_mode=check_mode)
    return result, failed, table


def summary(facts):
    return (len(facts["gpus"]), len(facts["nvswitches"]), len(facts["rdma_nics"]), facts["open_modules"])


@pytest.mark.parametrize("check_mode", [False, True])
def test_hgx_h100_node_from_lspci(run_module, command_table, check_mode):
    outputs = {COMMAND: (0, fixture("hgx-h100-x8-cx7.derived.txt"), "")}
    result, failed, table = run(run_module, command_table, outputs, check_mode=check_mode)
    assert not failed
    assert set(result) == {"changed", "ansible_facts"}
    assert result["changed"] is False
    facts = result["ansible_facts"]["pci"]
    assert set(facts) == {"gpus", "nvswitches", "rdma_nics", "open_modules", "source", "findings", "simulated"}
    assert summary(facts) == (8, 4, 12, "supported")
    assert facts["findings"] == []
    assert (facts["source"], facts["simulated"]) == ("lspci", False)
    assert facts["gpus"][0]["product"] == "NVIDIA H100 80GB HBM3"
    assert table.calls == [(COMMAND, C_LOCALE)]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gpud-a100-azure-nd.lspci-nn.txt", (8, 6, 9, "supported")),
        ("nvidia-b200-x8-cx7.derived.txt", (8, 0, 12, "required")),
        ("pcie-l40s-x4.derived.txt", (4, 0, 0, "supported")),
        ("gpud-a10-vm.lspci-nn.txt", (1, 0, 1, "supported")),
        ("satishdotpatel-v100s-x2.lspci-nn-nvidia.txt", (2, 0, 0, "unsupported")),
        ("debian12-bench-node.lspci-Dnn.txt", (0, 0, 0, "none")),
        ("empty", (0, 0, 0, "none")),
    ],
)
def test_nodes_from_lspci(run_module, command_table, name, expected):
    stdout = "" if name == "empty" else fixture(name)
    result, failed, _table = run(run_module, command_table, {COMMAND: (0, stdout, "")})
    assert not failed
    assert summary(result["ansible_facts"]["pci"]) == expected
    assert result["ansible_facts"]["pci"]["findings"] == []


def test_output_cut_mid_device_is_a_finding(run_module, command_table):
    # The L40S node's output cut inside its last GPU's line: three GPUs read, the fourth only a warning.
    text = fixture("pcie-l40s-x4.derived.txt")
    last = [line for line in text.splitlines() if "[10de:" in line][-1]
    cut = text[: text.index(last) + len(last) - 12]
    result, failed, _table = run(run_module, command_table, {COMMAND: (0, cut, "")})
    assert not failed
    facts = result["ansible_facts"]["pci"]
    assert summary(facts) == (3, 0, 0, "supported")
    assert [(f["severity"], f["code"]) for f in facts["findings"]] == [("warning", "lspci_lines_unread")]
    assert facts["findings"][0]["message"].startswith(
        "lspci printed 1 line(s) this module could not read as a device (output cut short?)"
    )


def test_lspci_failing_fails_the_task_with_its_output(run_module, command_table):
    # Captured: what lspci prints and exits with when it cannot read the PCI tree (see SOURCES.md).
    rc = int(fixture("debian12-bench-node-no-sysfs.rc"))
    stderr = fixture("debian12-bench-node-no-sysfs.stderr")
    outputs = {COMMAND: (rc, fixture("debian12-bench-node-no-sysfs.stdout"), stderr)}
    result, failed, _table = run(run_module, command_table, outputs)
    assert failed
    assert result["msg"] == "lspci failed with return code 1: lspci: Cannot open /nonexistent/devices"
    assert (result["cmd"], result["rc"], result["stdout"], result["stderr"]) == ([LSPCI, "-Dnn"], 1, "", stderr)


def test_output_that_is_not_lspci_nn_fails_the_task(run_module, command_table):
    # Plain lspci output (a real capture without ids), as an lspci that ignored -nn would print it.
    text = fixture("gpud-gb200.lspci.txt")
    result, failed, _table = run(run_module, command_table, {COMMAND: (0, text, "")})
    assert failed
    assert result["msg"].startswith("lspci printed 87 line(s) without a device address, class and [vendor:device] ids")
    assert (result["cmd"], result["rc"], result["stdout"], result["stderr"]) == ([LSPCI, "-Dnn"], 0, text, "")


def test_without_lspci_sysfs_is_read(run_module, command_table, tmp_path):
    # A sysfs tree derived in the test from the A100 capture (pci_trees.derive_sysfs): sysfs has no names.
    root = derive_sysfs(fixture("gpud-a100-azure-nd.lspci-nn.txt"), tmp_path / "sys")
    result, failed, table = run(run_module, command_table, {}, tools={}, sysfs_root=str(root))
    assert not failed
    facts = result["ansible_facts"]["pci"]
    assert summary(facts) == (8, 6, 9, "supported")
    assert facts["source"] == "sysfs"
    assert {g["name"] for g in facts["gpus"]} == {None}
    assert facts["gpus"][0]["product"] == "NVIDIA A100-SXM4-80GB"
    assert table.calls == []


def test_without_lspci_on_a_real_host_sysfs(run_module, command_table, tmp_path):
    # The test VM's captured sysfs: six functions, none NVIDIA.
    root = materialise_grep("host-vm-sysfs-vendor-device-class.grep.txt", tmp_path / "sys")
    result, failed, _table = run(run_module, command_table, {}, tools={}, sysfs_root=str(root))
    assert not failed
    assert result["ansible_facts"]["pci"] == {
        "gpus": [],
        "nvswitches": [],
        "rdma_nics": [],
        "open_modules": "none",
        "source": "sysfs",
        "findings": [],
        "simulated": False,
    }


@pytest.mark.parametrize("layout", ["missing", "empty"])
def test_without_lspci_or_readable_sysfs_the_lists_are_empty(run_module, command_table, tmp_path, layout):
    root = tmp_path / "sys"
    if layout == "empty":
        (root / "bus" / "pci" / "devices").mkdir(parents=True)
    result, failed, table = run(run_module, command_table, {}, tools={}, sysfs_root=str(root))
    assert not failed
    assert set(result) == {"changed", "ansible_facts"}
    facts = result["ansible_facts"]["pci"]
    assert summary(facts) == (0, 0, 0, "none")
    assert facts["source"] == "sysfs"
    assert table.calls == []


def test_simulated_hardware_is_reported(run_module, command_table, monkeypatch):
    marker = {"profile": "hgx_h100_8gpu", "captures": ["pci/hgx-h100-x8-cx7.derived.txt"]}
    monkeypatch.setattr(pci_facts.simulation, "simulated", lambda: marker)
    outputs = {COMMAND: (0, fixture("hgx-h100-x8-cx7.derived.txt"), "")}
    result, failed, _table = run(run_module, command_table, outputs)
    assert not failed
    assert result["ansible_facts"]["pci"]["simulated"] == marker


def test_unknown_option_is_refused(run_module, command_table):
    result, failed, table = run(run_module, command_table, {}, lspci_path="/bin/true")
    assert failed
    assert "lspci_path" in result["msg"]
    assert table.calls == []


def test_return_documents_every_key(run_module, command_table):
    documented = yaml.safe_load(pci_facts.RETURN)["ansible_facts"]["contains"]["pci"]["contains"]
    outputs = {COMMAND: (0, fixture("hgx-h100-x8-cx7.derived.txt"), "")}
    facts = run(run_module, command_table, outputs)[0]["ansible_facts"]["pci"]
    assert set(documented) == set(facts)
    assert set(documented["gpus"]["contains"]) == set(facts["gpus"][0])
    for kind in ("nvswitches", "rdma_nics"):
        assert set(documented[kind]["sample"][0]) == set(facts[kind][0])
