"""rdma_fabric's verification of a node read again after the run: every failure at once, what a container's host
owns, and the message of a node that passed."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import rdma_fabric

STATE = {"stack": "inbox", "peermem": {"enabled": True, "module": "nvidia-peermem", "status": "ready"},
         "hcas": ["mlx5_0"], "link_layer": "Ethernet", "gid_index": 3, "socket_ifname": None, "traffic_class": 104,
         "interfaces": ["ens1f0np0"], "simulated": False}  # fmt: skip
SETTINGS = {
    "stack": "inbox", "peermem": True, "interfaces": [{"name": "ens1f0np0", "kind": "roce"}], "ipoib_mtu": 4092,
    "roce_mtu": 9000, "tool": "systemd-networkd", "nm_prefix": "gpuops-", "held_packages": ["rdma-core", "perftest"],
    "doca": None, "state_file": "/var/lib/gpuops/rdma_fabric/state.json", "perftest_peer": "", "perftest_min": None,
    "profile_ports": 2, "qos_units": ["gpuops-roce-qos-ens1f0np0.service"],
}  # fmt: skip
# os_facts' gpuops_os of a node that owns its kernel, read after a run that set everything up (both network tools'
# units, as preflight reads them).
NODE = {
    "capabilities": {"own_kernel": True, "memlock_raisable": True},
    "limits": {"systemd_default_memlock": "infinity"},
    "units": {"systemd-networkd.service": {"enabled": True, "active": True},
              "NetworkManager.service": {"enabled": True, "active": True},
              "gpuops-roce-qos-ens1f0np0.service": {"enabled": True, "active": True}},
}  # fmt: skip
READS = {
    "packages": {"rdma-core": {"installed": "50.0-2", "held": True}, "perftest": {"installed": "24.01", "held": True}},
    "peermem": {"module": "nvidia-peermem", "loaded": True, "status": "ready", "problems": []},
    "ports": {"summary": "2 of 2 RDMA ports active at 400 Gb/s (Ethernet)", "problems": []},
    "state": STATE, "perftest_said": "", "perftest_passed": False, "tool": None,
}  # fmt: skip
CONTAINER = {"own_kernel": False, "memlock_raisable": False}


def verify(settings=None, node=None, **reads):
    return rdma_fabric.verify_problems(
        host="n1", settings={**SETTINGS, **(settings or {})}, node=node or NODE, reads={**READS, **reads}
    )


def test_a_node_as_set_up_passes_and_says_what_it_has():
    assert verify() == {
        "failures": [],
        "not_applicable": [],
        "summary": "n1 passed rdma_fabric verification: stack inbox (2 packages held at their versions); 2 of 2 RDMA "
        "ports active at 400 Gb/s (Ethernet); GPUDirect RDMA nvidia-peermem (nvidia-peermem) at boot, loaded; 1 fabric "
        "interfaces for systemd-networkd; state in /var/lib/gpuops/rdma_fabric/state.json (gid_index 3)",
    }


def test_every_failure_at_once_in_order():
    node = copy.deepcopy(NODE)
    node["limits"]["systemd_default_memlock"] = "8388608"
    node["units"]["gpuops-roce-qos-ens1f0np0.service"]["enabled"] = False
    found = verify(
        {"perftest_peer": "n2", "perftest_min": 360.0},
        node,
        packages={"rdma-core": {"installed": None, "held": False}, "perftest": {"installed": "24.01", "held": False}},
        peermem={"module": "nvidia-peermem", "loaded": False, "status": "stale", "problems": ["built before OFED"]},
        ports={"summary": "", "problems": [{"severity": "error", "code": "port_down", "message": "mlx5_0/1 is down"}]},
        perftest_said="ib_write_bw n1 (mlx5_0) -> n2 averaged 120.5 Gb/s, host memory",
    )["failures"]
    assert found == [
        "not installed: rdma-core",
        "not held: perftest",
        "mlx5_0/1 is down",
        "nvidia-peermem (nvidia-peermem) is not loaded: GPUDirect RDMA is off and NCCL stages through host memory",
        "nvidia-peermem is stale: built before OFED",
        "services do not get unlimited locked memory (DefaultLimitMEMLOCK=8388608): RDMA memory registration fails. "
        "Fix: stage 1 with os_baseline_memlock_unlimited: true",
        "not enabled: gpuops-roce-qos-ens1f0np0.service",
        "ib_write_bw n1 (mlx5_0) -> n2 averaged 120.5 Gb/s, host memory, expected at least 360.0 Gb/s",
    ]


def test_a_bandwidth_check_that_could_not_run_is_said_as_it_was():
    said = "ib_write_bw n1 (mlx5_0) -> n2 could not run: no server; the server on n2: "
    assert verify({"perftest_peer": "n2", "perftest_min": 360.0}, perftest_said=said)["failures"] == [said]
    passed = verify({"perftest_peer": "n2", "perftest_min": 360}, perftest_said="averaged 390", perftest_passed=True)
    assert passed["failures"] == []
    assert passed["summary"].endswith("interfaces for systemd-networkd; averaged 390 (at least 360); state in "
                                      "/var/lib/gpuops/rdma_fabric/state.json (gid_index 3)")  # fmt: skip


def test_switched_off_peermem_is_neither_checked_nor_claimed():
    found = verify({"peermem": False}, peermem={})
    assert found["failures"] == []
    assert "GPUDirect RDMA off (rdma_fabric_peermem: false);" in found["summary"]


def test_a_container_is_verified_for_what_it_owns_and_says_what_its_host_owns():
    node = {**NODE, "capabilities": CONTAINER, "limits": {"systemd_default_memlock": "65536"}}
    found = verify(node=node, peermem={"module": "nvidia-peermem", "loaded": False, "status": "ready"})
    assert found["failures"] == []
    assert found["not_applicable"] == ["nvidia-peermem loaded", "interfaces applied", "RoCE QoS applied",
                                       "service memlock limit"]  # fmt: skip
    assert "GPUDirect RDMA nvidia-peermem (nvidia-peermem) at boot; 1 fabric" in found["summary"]
    assert found["summary"].endswith(
        "(gid_index 3); not applicable: nvidia-peermem loaded, interfaces applied, RoCE QoS applied, service memlock "
        "limit (this node's kernel and network devices belong to its container host)"
    )
    bare = verify({"peermem": False, "interfaces": [], "qos_units": []}, node=node, peermem={})
    assert bare["not_applicable"] == ["service memlock limit"]


@pytest.mark.parametrize(
    ("stack", "doca", "said"),
    [
        ("doca", ["2.9.0", "doca-ofed", "2.9.0-1"], "stack doca (2 packages held at their versions, DOCA 2.9.0 "
         "doca-ofed 2.9.0-1);"),
        ("none", None, "stack none;"),
    ],
)  # fmt: skip
def test_the_stack_as_said(stack, doca, said):
    assert said in verify({"stack": stack, "doca": doca})["summary"]


@pytest.mark.parametrize(
    ("ports", "profile_ports", "said"),
    [(None, 0, "; no RDMA ports expected;"), (None, 2, "; ports not checked;")],
)
def test_ports_not_judged_are_said_why(ports, profile_ports, said):
    assert said in verify({"profile_ports": profile_ports}, ports=ports)["summary"]


IB = {"name": "ibp1s0", "kind": "ipoib"}


@pytest.mark.parametrize(
    ("tool", "seen", "failures"),
    [
        ("netplan", {"ibp1s0": {"mtu": 4092}, "ens1f0np0": {"mtu": "9000"}}, []),
        ("netplan", {"ibp1s0": {"mtu": 2044}}, ['netplan reads ibp1s0 as {"mtu": 2044}, not with MTU 4092',
                                                "netplan reads ens1f0np0 as null, not with MTU 9000"]),
        # Hostile or empty readings: every interface is named, nothing raises.
        ("netplan", {}, ["netplan reads ibp1s0 as null, not with MTU 4092",
                         "netplan reads ens1f0np0 as null, not with MTU 9000"]),
        ("netplan", ["ibp1s0"], ["netplan reads ibp1s0 as null, not with MTU 4092",
                                 "netplan reads ens1f0np0 as null, not with MTU 9000"]),
        ("networkmanager", ["gpuops-ibp1s0", "gpuops-ens1f0np0", "Wired connection 1"], []),
        ("networkmanager", ["gpuops-ibp1s0"], ["NetworkManager has not loaded the connection gpuops-ens1f0np0"]),
        # Not read (networkd has no reader, or check mode): nothing to say.
        ("networkmanager", None, []),
    ],
)  # fmt: skip
def test_the_network_tool_reads_the_interfaces_as_written(tool, seen, failures):
    settings = {"tool": tool, "interfaces": [IB, {"name": "ens1f0np0", "kind": "roce", "mtu": 9000}]}
    assert verify(settings, tool=seen)["failures"] == failures


def test_a_read_of_more_than_verification_needs_is_judged_on_what_it_needs():
    # Preflight's reads stand in for a second one where the run changed nothing: they cover both network tools' units
    # and the OS tools' packages, which are neither enabled nor held here.
    node = copy.deepcopy(NODE)
    node["units"]["NetworkManager.service"] = {"enabled": False, "active": False}
    packages = {**READS["packages"], "iproute2": {"installed": "6.1.0-3", "held": False}}
    assert verify(node=node, packages=packages)["failures"] == []
    # NetworkManager's node is judged on NetworkManager's unit; a wanted unit missing from the read is not enabled.
    assert verify({"tool": "networkmanager"}, node=node, packages=packages)["failures"] == [
        "not enabled: NetworkManager.service"
    ]
    del node["units"]["gpuops-roce-qos-ens1f0np0.service"]
    assert verify(node=node)["failures"] == ["not enabled: gpuops-roce-qos-ens1f0np0.service"]
    # A held package the read lacks is not installed.
    assert verify(packages={"rdma-core": READS["packages"]["rdma-core"]})["failures"] == ["not installed: perftest"]
