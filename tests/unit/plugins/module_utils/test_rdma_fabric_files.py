"""rdma_fabric's files in one managed_paths call (each tool's, the QoS units with their enablement, the state file,
and the removal of those no longer wanted), and the steps a node needs after it."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import rdma_fabric

SETTINGS = {
    "tool": "systemd-networkd", "ipoib_mtu": 4092, "roce_mtu": 9000, "peermem": True, "roce_qos": True,
    "roce_dscp": 26, "roce_priority": 3, "roce_ecn": True, "dcb": "/usr/sbin/dcb",
    "modules_load": "/etc/modules-load.d/gpuops-rdma-fabric.conf", "networkd_dir": "/etc/systemd/network",
    "networkd_prefix": "60-gpuops-", "netplan_file": "/etc/netplan/60-gpuops-rdma-fabric.yaml",
    "nm_dir": "/etc/NetworkManager/system-connections", "nm_prefix": "gpuops-", "qos_prefix": "gpuops-roce-qos-",
    "state_file": "/var/lib/gpuops/rdma_fabric/state.json",
    "interfaces": [{"name": "ens1np0", "kind": "roce", "address": "10.20.0.12/24"},
                   {"name": "ibp13s0", "kind": "ipoib", "ipoib_mode": "connected", "mtu": 65520}],
    "owned": {"systemd-networkd": "/etc/systemd/network/60-gpuops-*.network",
              "netplan": "/etc/netplan/60-gpuops-rdma-fabric.yaml",
              "networkmanager": "/etc/NetworkManager/system-connections/gpuops-*.nmconnection",
              "qos": "/etc/systemd/system/gpuops-roce-qos-*.service"},
}  # fmt: skip
NETWORKD = "/etc/systemd/network/60-gpuops-"
NM = "/etc/NetworkManager/system-connections/gpuops-"
UNIT = "/etc/systemd/system/gpuops-roce-qos-ens1np0.service"
WANTS = "/etc/systemd/system/sys-subsystem-net-devices-ens1np0.device.wants/gpuops-roce-qos-ens1np0.service"
STATE = {"stack": "inbox", "gid_index": 3, "hcas": ["mlx5_0"]}


def paths(owned=(), **settings):
    entries = rdma_fabric.configuration_paths(
        host="l40s", settings={**SETTINGS, **settings}, peermem_module="nvidia-peermem", state=STATE, owned=list(owned)
    )
    return {e["path"]: e for e in entries}


def test_everything_the_stage_leaves_on_a_node():
    entries = paths()
    assert [(p, e["state"], e.get("mode")) for p, e in entries.items()] == [
        ("/etc/modules-load.d/gpuops-rdma-fabric.conf", "file", "0644"),
        (NETWORKD + "ens1np0.network", "file", "0644"),
        (NETWORKD + "ibp13s0.network", "file", "0644"),
        (UNIT, "file", "0644"),
        # What systemctl enable makes of WantedBy=: the role lays the link out itself, in the same round trip.
        (WANTS, "link", None),
        ("/var/lib/gpuops/rdma_fabric", "directory", "0755"),
        ("/var/lib/gpuops/rdma_fabric/state.json", "file", "0644"),
    ]
    assert entries[WANTS]["src"] == UNIT
    assert entries["/etc/modules-load.d/gpuops-rdma-fabric.conf"]["content"].endswith(
        "it was built for).\nnvidia-peermem\n"
    )
    assert entries["/var/lib/gpuops/rdma_fabric/state.json"]["content"] == (
        '{\n    "gid_index": 3,\n    "hcas": [\n        "mlx5_0"\n    ],\n    "stack": "inbox"\n}\n'
    )
    assert entries[NETWORKD + "ibp13s0.network"]["content"] == (
        rdma_fabric.HEADER + "[Match]\nName=ibp13s0\n\n[Link]\nMTUBytes=65520\nRequiredForOnline=no\n\n[Network]\n"
        "# A fabric link carries RDMA and NCCL's bootstrap, not a default route.\nLinkLocalAddressing=no\n"
        "IPv6AcceptRA=no\n\n[IPoIB]\nMode=connected\n"
    )


def test_the_qos_unit_applies_dscp_pfc_and_ecn_at_link_up():
    content = paths()[UNIT]["content"]
    assert "BindsTo=sys-subsystem-net-devices-ens1np0.device\n" in content
    assert "ExecStart=/usr/sbin/dcb app replace dev ens1np0 dscp-prio 26:3\n" in content
    assert "ExecStart=/usr/sbin/dcb pfc set dev ens1np0 prio-pfc all:off 3:on\n" in content
    assert "/sys/class/net/ens1np0/ecn/roce_np/enable/3 && " in content
    assert "roce_np" not in paths(roce_ecn=False)[UNIT]["content"]
    assert content.endswith("[Install]\nWantedBy=sys-subsystem-net-devices-ens1np0.device\n")


def test_netplan_and_networkmanager_files_are_for_root_alone():
    netplan = paths(tool="netplan")["/etc/netplan/60-gpuops-rdma-fabric.yaml"]
    assert netplan["mode"] == "0600"
    assert (
        "    ens1np0:\n      renderer: networkd\n      mtu: 9000\n      addresses: [10.20.0.12/24]\n"
        in netplan["content"]
    )
    assert netplan["content"].endswith("      optional: true\n      infiniband-mode: connected\n")
    keyfiles = paths(tool="networkmanager")
    roce, ipoib = keyfiles[NM + "ens1np0.nmconnection"], keyfiles[NM + "ibp13s0.nmconnection"]
    assert roce["mode"] == ipoib["mode"] == "0600"
    # The UUID Ansible's to_uuid gave the connection of this host and interface when a template wrote it.
    assert "\nuuid=fa6b4420-ca87-5bc3-8fbc-b0dbc6e97e17\n" in roce["content"]
    assert "\ntype=ethernet\n" in roce["content"] and "method=manual\naddress1=10.20.0.12/24\n" in roce["content"]
    assert "\ntype=infiniband\n" in ipoib["content"] and "transport-mode=connected\n" in ipoib["content"]
    assert "[ipv4]\nmethod=disabled\n" in ipoib["content"]


def test_what_is_no_longer_wanted_goes_a_qos_unit_with_its_enablement():
    owned = [NETWORKD + "ens1np0.network", NETWORKD + "old0.network", "/etc/netplan/60-gpuops-rdma-fabric.yaml",
             NM + "old0.nmconnection", UNIT, "/etc/systemd/system/gpuops-roce-qos-old0.service"]  # fmt: skip
    absent = [p for p, e in paths(owned, roce_qos=True).items() if e["state"] == "absent"]
    assert absent == [
        "/etc/NetworkManager/system-connections/gpuops-old0.nmconnection",
        "/etc/netplan/60-gpuops-rdma-fabric.yaml",
        "/etc/systemd/network/60-gpuops-old0.network",
        "/etc/systemd/system/gpuops-roce-qos-old0.service",
        "/etc/systemd/system/sys-subsystem-net-devices-old0.device.wants/gpuops-roce-qos-old0.service",
    ]


def test_switched_off_settings_remove_their_files():
    entries = paths([UNIT], peermem=False, roce_qos=False, tool="", interfaces=[])
    assert {p: e["state"] for p, e in entries.items()} == {
        "/etc/modules-load.d/gpuops-rdma-fabric.conf": "absent",
        UNIT: "absent",
        WANTS: "absent",
        "/var/lib/gpuops/rdma_fabric": "directory",
        "/var/lib/gpuops/rdma_fabric/state.json": "file",
    }


def steps(changed=(), own_kernel=True, netdevs=("ens1np0",), **settings):
    return rdma_fabric.configuration_steps(
        settings={**SETTINGS, **settings}, changed_paths={p: ["absent"] for p in changed}, own_kernel=own_kernel,
        netdevs=list(netdevs),
    )  # fmt: skip


STARTED = [{"unit": "gpuops-roce-qos-ens1np0.service", "state": "started"}]
NOTHING = {"networkd": "started", "netplan_generate": False, "netplan_apply": False, "nm_reload": False, "nm_up": [],
           "qos_reload": False, "qos_apply": STARTED, "apply": True}  # fmt: skip


def test_a_converged_node_keeps_its_services_running_and_nothing_more():
    assert steps() == NOTHING
    # No RoCE device (yet): nothing to apply QoS to; it runs at link-up.
    assert steps(netdevs=[])["qos_apply"] == []


@pytest.mark.parametrize(
    ("tool", "changed", "wanted"),
    [
        ("systemd-networkd", [NETWORKD + "ibp13s0.network"], {"networkd": "reloaded"}),
        # A node that left networkd: its removed files still reload it.
        ("netplan", [NETWORKD + "old0.network"], {"networkd": "reloaded"}),
        ("netplan", ["/etc/netplan/60-gpuops-rdma-fabric.yaml"],
         {"networkd": None, "netplan_generate": True, "netplan_apply": True}),
        ("networkmanager", [NM + "ens1np0.nmconnection", NM + "old0.nmconnection"],
         {"networkd": None, "nm_reload": True, "nm_up": ["ens1np0"]}),
        ("systemd-networkd", [UNIT], {"qos_reload": True, "qos_apply": [{**STARTED[0], "state": "restarted"}]}),
        ("systemd-networkd", [WANTS], {"qos_reload": True}),
    ],
)  # fmt: skip
def test_each_change_asks_for_its_step(tool, changed, wanted):
    assert steps(changed, tool=tool) == {**NOTHING, **wanted}


def test_a_container_reads_its_files_again_but_applies_nothing():
    changed = [NM + "ens1np0.nmconnection", "/etc/netplan/60-gpuops-rdma-fabric.yaml", NETWORKD + "x.network", UNIT]
    assert steps(changed, own_kernel=False, tool="networkmanager") == {
        "networkd": None, "netplan_generate": True, "netplan_apply": False, "nm_reload": True, "nm_up": [],
        "qos_reload": True, "qos_apply": [], "apply": True,
    }  # fmt: skip


def test_a_converged_container_takes_no_step():
    # Its network devices and services are its host's: nothing to keep running, nothing to include.
    assert steps(own_kernel=False) == {
        "networkd": None, "netplan_generate": False, "netplan_apply": False, "nm_reload": False, "nm_up": [],
        "qos_reload": False, "qos_apply": [], "apply": False,
    }  # fmt: skip
