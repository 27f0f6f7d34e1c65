"""rdma_fabric on two simulated machines (HGX H100 8x NDR InfiniBand on Debian 12 with netplan, moved to
systemd-networkd and back in a test; 4x L40S with two RoCE ports and an IPoIB link on Debian 13 with NetworkManager):
the real state of the nodes after converge, each network tool's own reading of the interface files, the state file
the nccl_tests role reads, and verify failing with clear messages on a port down, a port at the wrong rate and
GPUDirect RDMA asked for without a driver.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

PACKAGES = ["rdma-core", "ibverbs-providers", "ibverbs-utils", "infiniband-diags", "perftest"]
STATE = "/var/lib/gpuops/rdma_fabric/state.json"
CONVERGE = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"]) / "converge.yml"
IBSTAT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "tests" / "fixtures" / "infiniband" / "ibstat"
# The role without the stage's inventory check, for a run that gives a node another profile through a host variable
# (which the rack inventory contract rightly refuses).
ROLE_ONLY = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "tests" / "integration" / "rdma_fabric_preflight.yml"


def test_the_stack_is_installed_and_held_at_one_version(host):
    held = host.check_output("apt-mark showhold").split()
    for package in PACKAGES:
        assert host.package(package).is_installed, package
        assert package in held, f"{package} is not held"
    assert host.exists("ibstat") and host.exists("ib_write_bw") and host.exists("ibv_devinfo")


def test_no_peermem_at_boot_when_gpudirect_is_off(host):
    assert not host.file("/etc/modules-load.d/gpuops-rdma-fabric.conf").exists


@pytest.mark.on("h100")
def test_ipoib_interfaces_for_netplan_rendered_by_netplan_itself(host):
    config = host.file("/etc/netplan/60-gpuops-rdma-fabric.yaml")
    assert config.mode == 0o600
    # netplan's own reading of the file, and the networkd files it rendered from it (netplan generate).
    seen = yaml.safe_load(host.check_output("netplan get ethernets"))
    assert seen["ibp26s0"]["mtu"] == 4092 and seen["ibp26s0"]["addresses"] == ["10.10.0.11/16"]
    assert seen["ibp60s0"]["mtu"] == 2044
    rendered = host.file("/run/systemd/network/10-netplan-ibp26s0.network").content_string
    assert "Name=ibp26s0\n" in rendered and "Address=10.10.0.11/16\n" in rendered
    assert "[IPoIB]\nMode=datagram\n" in rendered
    assert host.service("systemd-networkd").is_enabled
    # No file of another tool.
    assert host.run("ls /etc/systemd/network/60-gpuops-*").rc != 0


@pytest.mark.on("h100")
def test_a_node_leaving_a_tool_loses_that_tools_files(host, stage_run):
    """h100 given systemd-networkd for a run: its netplan file goes (and netplan renders without it), networkd files
    come; then back to netplan."""
    try:
        networkd = ["--limit", "h100", "-e", "rdma_fabric_network_tool=systemd-networkd"]
        rc, output = stage_run(CONVERGE, "rdma_fabric_configure", networkd)
        assert rc == 0, output[-3000:]
        first = host.file("/etc/systemd/network/60-gpuops-ibp26s0.network").content_string
        assert "Name=ibp26s0\n" in first and "MTUBytes=4092\n" in first and "Address=10.10.0.11/16\n" in first
        assert "[IPoIB]\nMode=datagram\n" in first
        assert "MTUBytes=2044\n" in host.file("/etc/systemd/network/60-gpuops-ibp60s0.network").content_string
        assert not host.file("/etc/netplan/60-gpuops-rdma-fabric.yaml").exists
        assert not host.file("/run/systemd/network/10-netplan-ibp26s0.network").exists
    finally:
        rc, output = stage_run(CONVERGE, "rdma_fabric_configure", ["--limit", "h100"])
    assert rc == 0, output[-3000:]
    assert host.run("ls /etc/systemd/network/60-gpuops-*").rc != 0
    assert host.file("/run/systemd/network/10-netplan-ibp26s0.network").exists


@pytest.mark.on("l40s")
def test_connections_for_networkmanager_loaded_by_it(host):
    for name in ("ens1np0", "ens2np0", "ibp13s0"):
        assert host.file(f"/etc/NetworkManager/system-connections/gpuops-{name}.nmconnection").mode == 0o600
    # NetworkManager's own reading of the keyfiles.
    show = "nmcli --terse --get-values {} connection show gpuops-{}"
    roce = "connection.type,connection.interface-name,802-3-ethernet.mtu,ipv4.method,ipv4.addresses"
    assert host.check_output(show.format(roce, "ens1np0")).splitlines() == [
        "802-3-ethernet", "ens1np0", "9000", "manual", "10.20.0.12/24"
    ]  # fmt: skip
    ipoib = "connection.type,infiniband.transport-mode,infiniband.mtu,ipv4.addresses"
    assert host.check_output(show.format(ipoib, "ibp13s0")).splitlines() == [
        "infiniband", "connected", "65520", "10.30.0.12/16"
    ]  # fmt: skip
    assert host.run("ls /etc/systemd/network/60-gpuops-* /etc/netplan/60-gpuops-*").rc != 0


@pytest.mark.on("l40s")
def test_roce_interfaces_and_their_qos_at_link_up(host):
    for name in ("ens1np0", "ens2np0"):
        unit = host.file(f"/etc/systemd/system/gpuops-roce-qos-{name}.service").content_string
        assert f"ExecStart=/usr/sbin/dcb app replace dev {name} dscp-prio 26:3\n" in unit
        assert f"ExecStart=/usr/sbin/dcb pfc set dev {name} prio-pfc all:off 3:on\n" in unit
        assert f"/sys/class/net/{name}/ecn/roce_np/enable/3" in unit
        wants = f"/etc/systemd/system/sys-subsystem-net-devices-{name}.device.wants/gpuops-roce-qos-{name}.service"
        assert host.file(wants).is_symlink
    # The tool the units call exists and takes those objects (iproute2's dcb: app and pfc).
    usage = host.run("dcb help").stderr
    assert "app" in usage and "pfc" in usage


def test_state_file_for_nccl_tests(host):
    state = json.loads(host.file(STATE).content_string)
    assert state["stack"] == "inbox"
    assert state["peermem"] == {"enabled": False, "module": None, "status": "disabled"}
    if host.backend.get_hostname() == "h100":
        # The BlueField-3 Ethernet bond of the capture is not an NCCL HCA of the InfiniBand fabric.
        assert state["hcas"] == [f"mlx5_{n}" for n in (0, 1, 4, 5, 6, 7, 8, 9)]
        assert (state["link_layer"], state["gid_index"], state["socket_ifname"]) == ("InfiniBand", None, "eth0")
        assert state["traffic_class"] is None
    else:
        assert state["hcas"] == ["mlx5_0", "mlx5_3"]
        assert (state["link_layer"], state["gid_index"], state["socket_ifname"]) == ("Ethernet", 3, None)
        assert state["traffic_class"] == 104
    assert state["simulated"]["profile"] in ("hgx_h100_8gpu", "pcie_l40s_4gpu")


@pytest.mark.on("l40s")
def test_verification_says_what_a_container_cannot_show(host, stage_run):
    rc, output = stage_run(CONVERGE, "rdma_fabric_verify", ["--limit", "l40s"])
    assert rc == 0, output[-3000:]
    assert "l40s passed rdma_fabric verification: stack inbox (5 packages held at their versions);" in output
    assert "[SIMULATED pcie_l40s_4gpu] l40s (pcie_l40s_4gpu): 2/2 Ethernet ports active at 400 Gb/s" in output
    assert "not applicable: interfaces applied, RoCE QoS applied" in output
    assert "belong to its container host" in output


@pytest.mark.parametrize(
    ("capture", "message"),
    [
        ("gpud-h100-ib-bluefield3-mlx5_4-down.derived.txt",
         "7 active InfiniBand port(s) found, expected 8: mlx5_0/1, mlx5_1/1, mlx5_5/1, mlx5_6/1, mlx5_7/1, mlx5_8/1, "
         "mlx5_9/1; mlx5_4 port 1 is down and polling: no link partner (cable, transceiver or switch port)"),
        ("gpud-h100-ib-bluefield3-mlx5_6-hdr.derived.txt",
         "mlx5_6 port 1 runs at 200 Gb/s, expected at least 400 Gb/s"),
    ],
    ids=["port_down", "rate_low"],
)  # fmt: skip
@pytest.mark.on("h100")
def test_verification_fails_on_a_port_fault(host, capture, message, stage_run, replay_fault):
    with replay_fault(host, "ibstat", "", IBSTAT / capture):
        rc, output = stage_run(CONVERGE, "rdma_fabric_verify", ["--limit", "h100"])
    assert rc != 0
    assert f"h100 failed rdma_fabric verification: {message}" in output, output[-3000:]


@pytest.mark.on("l40s")
def test_gpudirect_without_a_driver_stops_in_preflight(host, stage_run):
    before = host.file(STATE).content_string
    rc, output = stage_run(
        CONVERGE, "rdma_fabric", ["--limit", "l40s", "--extra-vars", json.dumps({"rdma_fabric_peermem": True})]
    )
    assert rc != 0
    assert "rdma_fabric_peermem is true but l40s has no NVIDIA driver built by DKMS for its kernels" in output
    assert "Fix: run playbooks/nvidia_driver.yml first" in output
    assert "l40s : ok=" in output and "changed=0" in output
    assert host.file(STATE).content_string == before


@pytest.mark.on("l40s")
def test_bandwidth_peer_on_another_link_layer_stops_in_preflight(host, tmp_path, stage_run):
    extra = tmp_path / "peer.yml"
    extra.write_text(json.dumps({"all": {"hosts": {"l40s": {"rdma_fabric_perftest_peer": "h100"}}}}))
    rc, output = stage_run(CONVERGE, "rdma_fabric_verify", ["-i", str(extra)])
    assert rc != 0
    assert (
        'rdma_fabric_perftest_peer is "h100": its fabric is InfiniBand, this one Ethernet: ib_write_bw needs both '
        "ends on one link layer. Nothing was changed." in output
    ), output[-3000:]


NO_CUDA = "this perftest was built without CUDA (ib_write_bw --help offers no --use_cuda): it cannot use GPU memory"
# What verify says of the run, per rdma_fabric_perftest_gpudirect: auto runs l40s's simulated perftest, which replays
# a 400G RoCE run on its ports (host memory: the stand-in offers no --use_cuda), against h100's, which replays NDR
# runs on its InfiniBand ports and has no capture for its Ethernet bond (the simulation does not make the client fail
# with its server; h100 fails its own port check); required asks each end's ib_write_bw --help first: l40s's offers
# no --use_cuda, so its client does not run; h100's does (its simulated perftest has CUDA), so its server runs, from
# GPU 0, on the bond it has no capture for.
BANDWIDTH_SAID = {
    "auto": "ib_write_bw l40s (mlx5_0) -> h100 averaged 381.41 Gb/s, host memory (its perftest was built without "
    "CUDA) (at least 360.0);",
    "required": f"l40s failed rdma_fabric verification: ib_write_bw l40s (mlx5_0) -> h100 could not run: {NO_CUDA}; "
    "the server on h100: ib_write_bw (simulated): no capture for arguments '-d mlx5_bond_0 -D 5 -s 65536 -p 18515 -F "
    "--report_gbits --use_cuda=0'",
}


@pytest.mark.parametrize("gpudirect", sorted(BANDWIDTH_SAID))
@pytest.mark.on("l40s")
def test_bandwidth_check_runs_ib_write_bw_and_says_what_it_measured(host, tmp_path, stage_run, gpudirect):
    """l40s measures against h100, given the L40S profile for the length of the run (a second inventory: host
    variables beat the profile's group variables), so that h100's one Ethernet port (the BlueField-3 bond of its
    capture) serves. Both profiles have GPUs, so both ends are asked for GPU memory: auto falls back to host memory
    where perftest has no CUDA, required fails saying why for the client and what the server did. (h100 fails its own
    port check under that profile.)"""
    l40s = {"profile": "pcie_l40s_4gpu", "description": "as l40s", "gpu": {"model": "NVIDIA L40S",
            "architecture": "ada", "count": 4, "nvswitch": False},
            "infiniband": {"ports": 2, "rate_gbps": 400, "link_layer": "Ethernet"}}  # fmt: skip
    extra = tmp_path / "perftest.yml"
    # As converge.yml sets it: no driver is built in this scenario.
    extra.write_text(json.dumps({"all": {"vars": {"rdma_fabric_peermem": False},
                                         "hosts": {"l40s": {"rdma_fabric_perftest_peer": "h100",
                                                            "rdma_fabric_perftest_gpudirect": gpudirect},
                                                   "h100": {"gpuops_hardware": l40s}}}}))  # fmt: skip
    rc, output = stage_run(ROLE_ONLY, "rdma_fabric_verify", ["-i", str(extra)])
    assert rc != 0
    assert BANDWIDTH_SAID[gpudirect] in output, output[-4000:]


@pytest.mark.on("l40s")
def test_a_peer_that_failed_earlier_is_named_in_verify(host, tmp_path, stage_run):
    """Preflight judges both ends in one task, after both have read their state, so this node carries on while its
    peer stops there on its own input: the bandwidth check says the peer failed instead of waiting on a server that
    never starts."""
    l40s = {"profile": "pcie_l40s_4gpu", "description": "as l40s", "gpu": {"model": "NVIDIA L40S",
            "architecture": "ada", "count": 4, "nvswitch": False},
            "infiniband": {"ports": 2, "rate_gbps": 400, "link_layer": "Ethernet"}}  # fmt: skip
    extra = tmp_path / "peer-fails.yml"
    hosts = {"l40s": {"rdma_fabric_perftest_peer": "h100"},
             "h100": {"gpuops_hardware": l40s, "rdma_fabric_stack": "doca"}}  # fmt: skip
    extra.write_text(json.dumps({"all": {"vars": {"rdma_fabric_peermem": False}, "hosts": hosts}}))
    rc, output = stage_run(ROLE_ONLY, "rdma_fabric_verify", ["-i", str(extra)])
    assert rc != 0
    # h100 stops in the judgment, after its reads: DOCA is not published for its Debian 12.
    assert "rdma_fabric_stack is doca with rdma_fabric_doca_version" in output, output[-4000:]
    assert "ib_write_bw l40s -> h100 could not run: h100 failed earlier in this play" in output, output[-4000:]
