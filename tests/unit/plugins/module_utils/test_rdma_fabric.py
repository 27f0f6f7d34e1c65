"""rdma_fabric's decisions: nvidia-peermem against the driver/OFED build order, and the RoCE GID index for NCCL.

Node states here are synthetic data tables (kernel names as the bench's Debian 13 containers have them, times in
seconds); the GID entries use the sysfs form of the kernel's gids/<index> and gid_attrs files.
"""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import rdma_fabric

K1 = "6.12.117+deb13-amd64"
K2 = "6.12.120+deb13-amd64"


def built(mtime):
    return {"path": "/lib/modules/x/updates/dkms/m.ko.xz", "mtime": mtime}


@pytest.mark.parametrize(
    ("stack", "kernels", "status", "rebuild", "per_kernel"),
    [
        # Inbox stack: the driver's build against the kernel's own ib_core is final.
        ("inbox", {K1: {"peermem": built(100), "ofed_ib_core": None}}, "ready", [], {K1: "ready"}),
        # DOCA-OFED installed after the driver: the driver's peermem links against the kernel's ib_core.
        ("doca", {K1: {"peermem": built(100), "ofed_ib_core": built(200)}}, "rebuild", [K1], {K1: "rebuild"}),
        # The driver rebuilt after OFED: nothing to do.
        ("doca", {K1: {"peermem": built(300), "ofed_ib_core": built(200)}}, "ready", [], {K1: "ready"}),
        # Only the kernel whose OFED is newer is rebuilt.
        (
            "doca",
            {
                K1: {"peermem": built(300), "ofed_ib_core": built(200)},
                K2: {"peermem": built(100), "ofed_ib_core": built(200)},
            },
            "rebuild",
            [K2],
            {K1: "ready", K2: "rebuild"},
        ),
        # OFED present, peermem lost: rebuilding brings it back.
        ("doca", {K1: {"peermem": None, "ofed_ib_core": built(200)}}, "rebuild", [K1], {K1: "rebuild"}),
        # DOCA chosen but OFED's kernel modules are not built for this kernel: nothing to link against.
        ("doca", {K1: {"peermem": built(100), "ofed_ib_core": None}}, "problem", [], {K1: "ofed_missing"}),
        # Inbox driver build without peermem: the driver role's build found no ib_core.
        ("inbox", {K1: {"peermem": None, "ofed_ib_core": None}}, "problem", [], {K1: "peermem_missing"}),
    ],
)
def test_peermem_plan(stack, kernels, status, rebuild, per_kernel):
    plan = rdma_fabric.peermem_plan(stack, "nvidia-tesla-535", kernels)
    assert plan["status"] == status
    assert plan["rebuild"] == rebuild
    assert plan["kernels"] == per_kernel
    assert plan["module"] == "nvidia-tesla-535-peermem"
    assert bool(plan["problems"]) == (status == "problem")


def test_peermem_plan_without_a_driver():
    plan = rdma_fabric.peermem_plan("inbox", None, {K1: {"peermem": None, "ofed_ib_core": None}})
    assert plan == {"module": None, "status": "no_driver", "rebuild": [], "problems": [], "kernels": {}}


def test_problem_sentences_name_the_kernel():
    plan = rdma_fabric.peermem_plan("doca", "nvidia", {K1: {"peermem": built(1), "ofed_ib_core": None}})
    assert plan["problems"] == [
        f"kernel {K1} has no ib_core from DOCA-OFED under /lib/modules/{K1}/updates/dkms: its mlnx-ofed-kernel-dkms "
        "build is missing (dkms status names it)"
    ]


LINK_LOCAL = "fe80:0000:0000:0000:a288:c2ff:fead:eab8"
MAPPED = "0000:0000:0000:0000:0000:ffff:0a00:0001"
MAPPED_2 = "0000:0000:0000:0000:0000:ffff:0a00:0101"


@pytest.mark.parametrize(
    ("gids", "netdev", "index"),
    [
        # mlx5's usual table with one IPv4 address: v1 and v2 link-local, then v1 and v2 IPv4-mapped.
        (
            [
                {"index": 0, "gid": LINK_LOCAL, "type": "IB/RoCE v1", "ndev": "ens1np0"},
                {"index": 1, "gid": LINK_LOCAL, "type": "RoCE v2", "ndev": "ens1np0"},
                {"index": 2, "gid": MAPPED, "type": "IB/RoCE v1", "ndev": "ens1np0"},
                {"index": 3, "gid": MAPPED, "type": "RoCE v2", "ndev": "ens1np0"},
            ],
            "ens1np0",
            3,
        ),
        # No IPv4 address yet: nothing NCCL can route over.
        ([{"index": 1, "gid": LINK_LOCAL, "type": "RoCE v2", "ndev": "ens1np0"}], None, None),
        # A VLAN netdev's entry is not the port's own.
        (
            [
                {"index": 3, "gid": MAPPED, "type": "RoCE v2", "ndev": "ens1np0.100"},
                {"index": 5, "gid": MAPPED_2, "type": "RoCE v2", "ndev": "ens1np0"},
            ],
            "ens1np0",
            5,
        ),
        ([], None, None),
    ],
)
def test_roce_gid_index(gids, netdev, index):
    assert rdma_fabric.roce_gid_index(gids, netdev) == index


URL = "https://linux.mellanox.com/public/repo/doca/2.9.0/debian12.5/x86_64/"
KERNEL = {"mlnx-ofed-kernel-dkms": ["24.10.OFED.24.10.0.7.0.1-1"]}


@pytest.mark.parametrize(
    ("offered", "installed", "version"),
    [
        (["2.9.0-1"], None, "2.9.0-1"),
        # Several versions (a respun release): the newest by dpkg's order, not the index's.
        (["2.9.0-10", "2.9.0-9"], None, "2.9.0-10"),
        # The installed one stays while the release carries it: no upgrade under a running fabric.
        (["2.9.0-9", "2.9.0-10"], "2.9.0-9", "2.9.0-9"),
        # One the release does not carry (another release's) is replaced by the release's.
        (["2.9.0-1"], "3.1.0-1", "2.9.0-1"),
    ],
)
def test_doca_plan_picks_the_release_version(offered, installed, version):
    plan = rdma_fabric.doca_plan({"doca-ofed": offered, **KERNEL}, installed, "doca-ofed", "2.9.0", URL, "n1")
    assert plan == {"version": version, "problem": None}


def test_doca_plan_profile_missing_names_what_the_release_carries():
    index = {"doca-ofed": ["2.9.0-1"], "doca-roce": [], **KERNEL}
    plan = rdma_fabric.doca_plan(index, None, "doca-all", "2.9.0", URL, "n1")
    assert plan["version"] is None
    assert plan["problem"] == (
        f"n1: rdma_fabric_doca_profile is doca-all, which the DOCA 2.9.0 repository ({URL}) does not carry (it "
        "carries doca-ofed). Nothing was changed. Fix: rdma_fabric_doca_profile: doca-ofed, or copy that profile "
        "into the mirror."
    )


def test_doca_plan_without_ofed_kernel_package():
    plan = rdma_fabric.doca_plan({"doca-ofed": ["2.9.0-1"]}, None, "doca-ofed", "2.9.0", URL, "n1")
    assert plan["version"] is None
    assert "carries doca-ofed but not mlnx-ofed-kernel-dkms, OFED's kernel modules" in plan["problem"]


def test_doca_plan_without_any_profile():
    plan = rdma_fabric.doca_plan({}, None, "doca-ofed", "2.9.0", URL, "n1")
    assert "(it carries no DOCA-Host profile)" in plan["problem"]
    assert "Fix: a DOCA release directory, or copy that profile into the mirror." in plan["problem"]


def ib_core(loaded=True, version="24.10-0.7.0", srcversion="AAA", installed_srcversion="AAA"):
    return {"loaded": loaded, "version": version, "srcversion": srcversion,
            "installed_srcversion": installed_srcversion}  # fmt: skip


OLD, NEW = "2.9.0-1", "2.10.0-1"


@pytest.mark.parametrize(
    ("loaded", "installed", "planned", "reason"),
    [
        # Nothing loaded (a node without RDMA modules yet): OFED's load on first use.
        (ib_core(loaded=False, version=None), None, OLD, None),
        # A first install over the kernel's own ib_core.
        (ib_core(version=None, srcversion=None, installed_srcversion=None), None, OLD,
         "n1 runs its kernel's own ib_core: DOCA-OFED's kernel modules"),
        # The installed release runs: nothing to reboot for, also when the run re-installs nothing.
        (ib_core(), OLD, OLD, None),
        # A release change under running OFED modules.
        (ib_core(), OLD, NEW,
         "n1 runs DOCA-OFED's ib_core 24.10-0.7.0 and the DOCA profile moves from 2.9.0-1 to 2.10.0-1: the new "
         "release's kernel modules"),
        # That change installed by a run that stopped before its reboot: the re-run still reboots.
        (ib_core(installed_srcversion="BBB"), NEW, NEW,
         "n1 runs an ib_core (24.10-0.7.0) other than DOCA-OFED's installed for its kernel (an OFED change not yet "
         "booted into): those kernel modules"),
        # No srcversion to compare (a kernel without it, or no OFED ib_core on disk for the running kernel).
        (ib_core(installed_srcversion=None), OLD, OLD, None),
    ],
)  # fmt: skip
def test_doca_reboot_reason(loaded, installed, planned, reason):
    assert rdma_fabric.doca_reboot_reason(loaded, installed, planned, "n1") == reason


VALID = {
    "rdma_fabric_stack": "inbox",
    "rdma_fabric_peermem": True,
    "rdma_fabric_doca_version": "3.1.0",
    "rdma_fabric_doca_key_fingerprint": "",
    "rdma_fabric_interfaces": [],
    "profile": "hgx_h100_8gpu",
}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, []),
        (
            {"rdma_fabric_peermem": "true", "rdma_fabric_stack": "none"},
            ["rdma_fabric_peermem is true but", "rdma_fabric_stack is none but the hardware"],
        ),
        ({"rdma_fabric_peermem": "false", "rdma_fabric_stack": "none"}, ["rdma_fabric_stack is none but the hardware"]),
        (
            {"rdma_fabric_interfaces": [{"name": "ib0", "kind": "ipoib", "address": "999.1.1.1/99"}]},
            ['rdma_fabric_interfaces[0] (ib0) has address "999.1.1.1/99", not an IPv4 address with its prefix'],
        ),
        (
            {"rdma_fabric_interfaces": [{"name": "..", "kind": "roce"}]},
            ['rdma_fabric_interfaces[0] (..) has name "..", not a network interface name.'],
        ),
        (
            {"rdma_fabric_interfaces": [{"name": "ib0\n", "kind": "ipoib"}]},
            ['rdma_fabric_interfaces[0] (ib0\n) has name "ib0\\n", not a network interface name.'],
        ),
        (
            {"rdma_fabric_interfaces": [{"name": "ib0", "kind": "ipoib", "mtu": "4e3"}]},
            ['rdma_fabric_interfaces[0] (ib0) has mtu "4e3". Fix: 1280 to 65520'],
        ),
        (
            {"rdma_fabric_interfaces": [{"name": "ib0", "kind": "ipoib", "mtu": "4092"}]},
            [],
        ),
        (
            {"rdma_fabric_interfaces": [{"name": "ib0", "kind": "ipoib", "gateway": "10.0.0.1"}]},
            ["rdma_fabric_interfaces[0] (ib0) has unknown key(s) gateway. Fix: only name, kind, address, mtu"],
        ),
        ({"rdma_fabric_interfaces": ["ib0"]}, ['rdma_fabric_interfaces[0] is "ib0", not a mapping.']),
        ({"rdma_fabric_interfaces": "ib0"}, ['rdma_fabric_interfaces is "ib0", not a list.']),
    ],
)
def test_input_problems(changes, expected):
    problems = rdma_fabric.input_problems({**VALID, **changes}, ["2.9.0", "3.1.0"], 8)
    assert len(problems) == len(expected), problems
    for problem, text in zip(problems, expected, strict=True):
        assert problem.startswith(text), problems


# The preflight of one node: a GPU node of an NDR InfiniBand profile on Debian 12 with its driver built, every read
# as preflight hands it over, and changes of it per case.
HOST = "gpu-node-01"
PEER = "gpu-node-02"
NDR = {
    "profile": "hgx_h100_8gpu",
    "gpu": {"count": 8},
    "infiniband": {"ports": 8, "rate_gbps": 400, "link_layer": "InfiniBand"},
}
STORAGE = {"profile": "storage_ndr", "gpu": {"count": 0}, "infiniband": NDR["infiniband"]}
# A ConnectX on the fabric and a BlueField's Ethernet bond, which is no fabric HCA.
DEVICES = [
    {"name": "mlx5_0", "ports": [{"link_layer": "InfiniBand", "state": "active"}]},
    {"name": "mlx5_bond_0", "ports": [{"link_layer": "Ethernet", "state": "active"}]},
]
DEBIAN_12 = {
    "os": {
        "name": "Debian GNU/Linux 12 (bookworm)",
        "id": "debian",
        "version_id": "12",
        "package_manager": "apt",
    },
    "kernel": {"installed": [K1, K2]},
    "capabilities": {"own_kernel": True},
}
ROCKY_9 = {
    "os": {"name": "Rocky Linux 9.3 (Blue Onyx)", "id": "rocky", "version_id": "9.3", "package_manager": "dnf"},
    "kernel": {"installed": ["5.14.0-362.8.1.el9_3.x86_64"]},
    "capabilities": {"own_kernel": True},
}
VARIABLES = {
    "rdma_fabric_stack": "inbox",
    "rdma_fabric_peermem": True,
    "rdma_fabric_doca_version": "3.1.0",
    "rdma_fabric_doca_key_fingerprint": "",
    "rdma_fabric_doca_key_sha256": "",
    "rdma_fabric_doca_profile": "doca-ofed",
    "rdma_fabric_interfaces": [],
    "rdma_fabric_network_tool": "auto",
    "rdma_fabric_perftest_peer": "",
    "rdma_fabric_perftest_gpudirect": "auto",
}
FABRIC = {
    "peermem": {"module": "nvidia-tesla-535-peermem", "status": "ready", "problems": []},
    "ib_core": {"loaded": True, "version": None, "srcversion": "A1", "installed_srcversion": None},
}
READS = {"fabric": FABRIC, "network": None, "doca_index": None, "doca_installed": None, "devices": DEVICES}
NO_PEER = {"in_play": False, "hardware": None, "devices": None}
A_PEER = {"in_play": True, "hardware": NDR, "devices": DEVICES}
TABLES = {
    "doca_releases": {"2.9.0": ["debian12.5", "ubuntu22.04", "ubuntu24.04"], "3.1.0": ["ubuntu22.04", "ubuntu24.04"]},
    "doca_dir": "",
    "network_tools": {"systemd-networkd": "networkctl", "netplan": "netplan", "networkmanager": "nmcli"},
}
FINGERPRINT = "ABCD0123"
DOCA_URL = "http://m/linux.mellanox.com/public/repo/doca/2.9.0/debian12.5/x86_64/"
DOCA_INDEX = {
    "packages": {
        "doca-ofed": ["2.9.0-1"],
        "doca-roce": [],
        "doca-all": [],
        rdma_fabric.DOCA_KERNEL_PACKAGE: ["24.10-OFED.24.10.1.1.4.1"],
    },
    "index_url": DOCA_URL + "Packages.gz",
    "key_url": "http://m/linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub",
    "key_fingerprints": [FINGERPRINT],
    "key_sha256": "aa11",
    "key_problem": None,
}
# DOCA 2.9.0 on Debian 12 with its key pinned, the repository read.
DOCA = {
    "variables": {
        "rdma_fabric_stack": "doca",
        "rdma_fabric_doca_version": "2.9.0",
        "rdma_fabric_doca_key_fingerprint": FINGERPRINT,
    },
    "reads": {"doca_index": DOCA_INDEX},
    "tables": {"doca_dir": "debian12.5"},
}
NETWORK = ["networkmanager=inactive", "netplan_configs=0", "has=networkctl"]


def judge(variables=None, hardware=None, node=None, reads=None, peer=None, tables=None):
    return rdma_fabric.preflight(
        host=HOST,
        variables={**VARIABLES, **(variables or {})},
        hardware=NDR if hardware is None else hardware,
        node=DEBIAN_12 if node is None else node,
        reads={**READS, **(reads or {})},
        peer=NO_PEER if peer is None else peer,
        tables={**TABLES, **(tables or {})},
    )


def problems(**case):
    return judge(**case)["problems"]


def test_a_clean_node_has_no_problem():
    assert judge() == {
        "problems": [],
        "reboot_reasons": [],
        "doca_version": None,
        "network_tool": "",
        "hcas": ["mlx5_0"],
    }


PEERMEM_NO_DRIVER = (
    f"rdma_fabric_peermem is true but {HOST} has no NVIDIA driver built by DKMS for its kernels ({K1}, {K2}): "
    "nvidia-peermem comes with the driver's build. Nothing was changed. Fix: run playbooks/nvidia_driver.yml first "
    "(site.yml runs it before this stage), or rdma_fabric_peermem: false for a node without GPUDirect RDMA."
)
NO_DRIVER = {"fabric": {**FABRIC, "peermem": {"module": None, "status": "no_driver", "problems": []}}}
INBOX_ON_DNF = (
    "rdma_fabric_stack is inbox, which this collection installs with apt (Debian, Ubuntu: rdma-core, "
    f"ibverbs-providers, ibverbs-utils, infiniband-diags, perftest); {HOST} runs Rocky Linux 9.3 (Blue Onyx) (package "
    "manager dnf). Nothing was changed. Fix: an apt-based node, or install the RDMA stack with the OS's own tools and "
    "set rdma_fabric_stack: none."
)
DOCA_ON_DEBIAN = (
    "rdma_fabric_stack is doca with rdma_fabric_doca_version 3.1.0, which NVIDIA publishes for ubuntu22.04, "
    f"ubuntu24.04; {HOST} runs Debian GNU/Linux 12 (bookworm) (debian12). Nothing was changed. Fix: "
    "rdma_fabric_stack: inbox (the OS's own rdma-core), or a DOCA release published for this OS."
)
NO_NMCLI = (
    "rdma_fabric_interfaces names 1 interfaces for networkmanager (rdma_fabric_network_tool: networkmanager), but "
    f"{HOST} has no nmcli. Nothing was changed. Fix: rdma_fabric_network_tool set to the tool that owns this node's "
    "network (auto picks it), or install that tool."
)
NO_KEY_PIN = "rdma_fabric_stack is doca but rdma_fabric_doca_key_fingerprint is empty"
NO_TABLE = 'rdma_fabric_doca_version is "2.0.0", a DOCA release this collection has no table for.'


def peer_said(problem):
    return (
        f'rdma_fabric_perftest_peer is "{PEER}": {problem}. Nothing was changed. Fix: an inventory host of the same '
        'hardware profile in this play, or rdma_fabric_perftest_peer: "".'
    )


def gpudirect_said(without):
    return (
        f"rdma_fabric_perftest_gpudirect is required but the hardware profile of {without} has no GPU "
        "(gpuops_hardware.gpu.count is 0): there is no GPU memory to measure with. Nothing was changed. Fix: a peer "
        "and a node of GPU profiles, or rdma_fabric_perftest_gpudirect: auto (host memory there, named in the result)."
    )


def hcas_said(without):
    return (
        f'rdma_fabric_perftest_peer is "{PEER}" but {without} shows no RDMA device with a port on InfiniBand. Nothing '
        "was changed. Fix: bring the fabric up (verify without the bandwidth check names what is missing), or "
        'rdma_fabric_perftest_peer: "".'
    )


WITH_PEER = {"rdma_fabric_perftest_peer": PEER}
REQUIRED = {**WITH_PEER, "rdma_fabric_perftest_gpudirect": "required"}
ETHERNET = {**NDR, "infiniband": {**NDR["infiniband"], "link_layer": "Ethernet"}}
NO_PORTS = {**NDR, "infiniband": {"ports": 0, "rate_gbps": 0, "link_layer": "InfiniBand"}}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # nvidia-peermem: a driver build is needed; with the inbox stack a usable one.
        ({"reads": NO_DRIVER}, [PEERMEM_NO_DRIVER]),
        ({"reads": NO_DRIVER, "variables": {"rdma_fabric_peermem": False}}, []),
        (
            {"reads": {"fabric": {**FABRIC, "peermem": {"status": "problem", "problems": ["kernel x lacks it"]}}}},
            [
                f"{HOST}: nvidia-peermem is not usable: kernel x lacks it. Nothing was changed. Fix: rebuild the "
                "driver (playbooks/nvidia_driver.yml) after the RDMA stack is installed."
            ],
        ),
        # With DOCA, OFED comes next and the driver is rebuilt after it: a driver is enough here.
        ({**DOCA, "reads": {**DOCA["reads"], "fabric": {**FABRIC, "peermem": {"status": "problem"}}}}, []),
        ({**DOCA, "reads": {**DOCA["reads"], **NO_DRIVER}}, [PEERMEM_NO_DRIVER]),
        # Without a stack, nvidia-peermem is the variables' problem alone, not also the driver's.
        (
            {"reads": NO_DRIVER, "hardware": NO_PORTS, "variables": {"rdma_fabric_stack": "none"}},
            ["rdma_fabric_peermem is true but rdma_fabric_stack is none"],
        ),
        # The OS: apt for the inbox stack, a directory of the DOCA release.
        ({"node": ROCKY_9}, [INBOX_ON_DNF]),
        ({"node": ROCKY_9, "variables": {"rdma_fabric_stack": "none", "rdma_fabric_peermem": False}}, [
            "rdma_fabric_stack is none but the hardware profile hgx_h100_8gpu expects 8 RDMA ports."]),
        (
            {"variables": {"rdma_fabric_stack": "doca", "rdma_fabric_doca_key_fingerprint": FINGERPRINT}},
            [DOCA_ON_DEBIAN],
        ),
        # A release without a table has no OS list to judge the node against; one without its key pinned no read.
        (
            {"variables": {"rdma_fabric_stack": "doca", "rdma_fabric_doca_version": "2.0.0",
                           "rdma_fabric_doca_key_fingerprint": FINGERPRINT}},
            [NO_TABLE],
        ),
        (
            {"variables": {**DOCA["variables"], "rdma_fabric_doca_key_fingerprint": ""}, "tables": DOCA["tables"]},
            [NO_KEY_PIN],
        ),
        # The network tool's command.
        (
            {"variables": {"rdma_fabric_interfaces": [{"name": "ib0", "kind": "ipoib"}],
                           "rdma_fabric_network_tool": "networkmanager"}, "reads": {"network": NETWORK}},
            [NO_NMCLI],
        ),
        (
            {"variables": {"rdma_fabric_interfaces": [{"name": "ib0", "kind": "ipoib"}]},
             "reads": {"network": NETWORK}},
            [],
        ),
        # An interfaces value that is no list is the variables' problem only.
        ({"variables": {"rdma_fabric_interfaces": "ib0"}, "reads": {"network": NETWORK}}, [
            'rdma_fabric_interfaces is "ib0", not a list.']),
        # The bandwidth peer.
        ({"variables": WITH_PEER, "peer": A_PEER}, []),
        ({"variables": {"rdma_fabric_perftest_peer": HOST}, "peer": A_PEER}, [
            f'rdma_fabric_perftest_peer is "{HOST}": that is this node itself.']),
        ({"variables": WITH_PEER, "peer": {**A_PEER, "in_play": False}}, [peer_said("not a host of this play")]),
        (
            {"variables": WITH_PEER, "peer": A_PEER, "hardware": NO_PORTS},
            [peer_said("the hardware profile hgx_h100_8gpu expects no RDMA ports")],
        ),
        (
            {"variables": WITH_PEER, "peer": {**A_PEER, "hardware": ETHERNET}},
            [peer_said("its fabric is Ethernet, this one InfiniBand: ib_write_bw needs both ends on one link layer")],
        ),
        # Both ends need a fabric HCA.
        ({"variables": WITH_PEER, "peer": A_PEER, "reads": {"devices": DEVICES[1:]}}, [hcas_said(HOST)]),
        ({"variables": WITH_PEER, "peer": {**A_PEER, "devices": None}}, [hcas_said(PEER)]),
        ({"variables": WITH_PEER, "peer": {**A_PEER, "devices": []}, "reads": {"devices": []}}, [
            hcas_said(f"{HOST} and {PEER}")]),
        # Required GPUDirect: GPUs on both ends (the peer's where the inventory knows its profile).
        ({"variables": REQUIRED, "peer": A_PEER}, []),
        ({"variables": REQUIRED, "peer": A_PEER, "hardware": STORAGE}, [gpudirect_said(f"{HOST} (storage_ndr)")]),
        ({"variables": REQUIRED, "peer": {**A_PEER, "hardware": STORAGE}}, [gpudirect_said(f"{PEER} (storage_ndr)")]),
        (
            {"variables": REQUIRED, "peer": {**A_PEER, "hardware": STORAGE}, "hardware": STORAGE},
            [gpudirect_said(f"{HOST} (storage_ndr) and {PEER} (storage_ndr)")],
        ),
        (
            {"variables": REQUIRED, "hardware": STORAGE},
            [gpudirect_said(f"{HOST} (storage_ndr)"), peer_said("not a host of this play")],
        ),
        ({"variables": {**REQUIRED, "rdma_fabric_perftest_gpudirect": "auto"}, "peer": {**A_PEER, "hardware": STORAGE}},
         []),
    ],
)  # fmt: skip
def test_each_problem_alone(case, expected):
    found = problems(**case)
    assert len(found) == len(expected), found
    for problem, text in zip(found, expected, strict=True):
        assert problem.startswith(text), found


@pytest.mark.parametrize(
    ("count", "required_fails"),
    [(0, True), ("0", True), (None, True), (1, False), ("1", False)],
)
def test_gpu_count_boundary(count, required_fails):
    hardware = {**NDR, "gpu": {"count": count}}
    assert bool(problems(variables=REQUIRED, peer=A_PEER, hardware=hardware)) is required_fails


@pytest.mark.parametrize(("ports", "peer_fails"), [(0, True), ("0", True), (1, False), ("8", False)])
def test_port_count_boundary(ports, peer_fails):
    hardware = {**NDR, "infiniband": {**NDR["infiniband"], "ports": ports}}
    assert bool(problems(variables=WITH_PEER, peer=A_PEER, hardware=hardware)) is peer_fails


@pytest.mark.parametrize(
    ("chosen", "lines", "tool"),
    [
        ("netplan", ["networkmanager=active"], "netplan"),
        ("auto", ["networkmanager=active", "netplan_configs=2", "has=netplan"], "networkmanager"),
        ("auto", ["networkmanager=inactive", "netplan_configs=1", "has=netplan"], "netplan"),
        # netplan installed but the node's configuration is elsewhere; or configurations without netplan.
        ("auto", ["networkmanager=inactive", "netplan_configs=0", "has=netplan"], "systemd-networkd"),
        ("auto", ["networkmanager=inactive", "netplan_configs=1"], "systemd-networkd"),
        ("auto", [], "systemd-networkd"),
    ],
)
def test_network_tool(chosen, lines, tool):
    assert rdma_fabric.network_tool(chosen, lines) == tool
    variables = {"rdma_fabric_interfaces": [{"name": "ib0", "kind": "ipoib"}], "rdma_fabric_network_tool": chosen}
    assert judge(variables=variables, reads={"network": lines})["network_tool"] == tool


def test_fabric_hcas():
    assert rdma_fabric.fabric_hcas(NDR, DEVICES) == ["mlx5_0"]
    assert rdma_fabric.fabric_hcas(ETHERNET, DEVICES) == ["mlx5_bond_0"]
    # A profile without RDMA ports has none, whatever an earlier read left; a read that did not happen finds none.
    assert rdma_fabric.fabric_hcas(NO_PORTS, DEVICES) == []
    assert rdma_fabric.fabric_hcas(NDR, None) == []
    assert rdma_fabric.fabric_hcas(None, DEVICES) == []


def test_doca_gives_the_version_and_the_reboot():
    found = judge(**DOCA)
    assert found["problems"] == []
    assert found["doca_version"] == "2.9.0-1"
    assert found["reboot_reasons"] == [
        f"{HOST} runs its kernel's own ib_core: DOCA-OFED's kernel modules (and an nvidia-peermem built against them) "
        "load only at the next boot"
    ]
    # A container's kernel is its host's; OFED's ib_core already running needs none.
    in_a_container = {**DEBIAN_12, "capabilities": {"own_kernel": False}}
    assert judge(**DOCA, node=in_a_container)["reboot_reasons"] == []
    running = {
        **FABRIC,
        "ib_core": {"loaded": True, "version": "24.10", "srcversion": "A", "installed_srcversion": "A"},
    }
    assert judge(**{**DOCA, "reads": {**DOCA["reads"], "fabric": running}})["reboot_reasons"] == []


def test_doca_key_other_than_the_pin_is_judged_before_the_profile():
    index = {**DOCA_INDEX, "key_fingerprints": ["EEEE"], "packages": {}}
    found = judge(**{**DOCA, "reads": {"doca_index": index}})
    # One problem: an index under a key not trusted says nothing of the profiles it carries.
    assert found["problems"] == [
        f"{HOST}: the signing key {DOCA_INDEX['key_url']} holds EEEE with SHA-256 aa11, but "
        f"rdma_fabric_doca_key_fingerprint is {FINGERPRINT}: refusing to trust it. Nothing was changed. Fix: point "
        "gpuops_mirror_url at a mirror holding NVIDIA's key, or correct the pins."
    ]
    assert (found["doca_version"], found["reboot_reasons"]) == (None, [])


def test_doca_profile_the_release_lacks():
    found = judge(**{**DOCA, "variables": {**DOCA["variables"], "rdma_fabric_doca_profile": "doca-all"}})
    assert found["problems"] == [
        f"{HOST}: rdma_fabric_doca_profile is doca-all, which the DOCA 2.9.0 repository ({DOCA_URL}) does not carry "
        "(it carries doca-ofed). Nothing was changed. Fix: rdma_fabric_doca_profile: doca-ofed, or copy that profile "
        "into the mirror."
    ]
    assert (found["doca_version"], found["reboot_reasons"]) == (None, [])


def test_every_problem_at_once():
    """Independent problems of the variables, the OS, the network tool, the driver and the peer, in one judgment."""
    found = problems(
        variables={
            "rdma_fabric_stack": "doca",
            "rdma_fabric_interfaces": [{"name": "ib0", "kind": "infiniband"}],
            "rdma_fabric_network_tool": "networkmanager",
            **REQUIRED,
        },
        hardware=STORAGE,
        reads={**NO_DRIVER, "network": NETWORK},
        peer={**A_PEER, "in_play": False},
    )
    assert found == [
        NO_KEY_PIN + ": the DOCA repository is never trusted without its signing key pinned. Fix: the fingerprint of "
        "GPG-KEY-Mellanox.pub as NVIDIA publishes it.",
        'rdma_fabric_interfaces[0] (ib0) has kind "infiniband". Fix: kind: ipoib (an InfiniBand port) or kind: roce '
        "(an Ethernet port).",
        gpudirect_said(f"{HOST} (storage_ndr)"),
        peer_said("not a host of this play"),
        DOCA_ON_DEBIAN,
        NO_NMCLI,
        PEERMEM_NO_DRIVER,
    ]


# package_steps: package_info's entries as it reads a Debian 12 node (installed, candidate, held, broken).
STACK = ["rdma-core", "perftest"]
TOOLS = ["iproute2", "ethtool"]


def pkg(installed=None, candidate="1.0", held=False, broken=False):
    return {"installed": installed, "candidate": candidate, "held": held, "broken": broken}


def converged(**changes):
    packages = {name: pkg("1.0", held=True) for name in STACK} | {name: pkg("1.0") for name in TOOLS}
    return packages | changes


def test_a_converged_node_has_no_package_step():
    steps = rdma_fabric.package_steps(host="n1", stack_packages=STACK, os_packages=TOOLS, packages=converged())
    assert steps == {"problems": [], "install": [], "os_tools": [], "hold": False, "act": False}


def test_a_fresh_node_installs_the_candidates_then_every_tool_and_holds():
    packages = {name: pkg(candidate="2.0") for name in STACK + TOOLS}
    steps = rdma_fabric.package_steps(host="n1", stack_packages=STACK, os_packages=TOOLS, packages=packages)
    assert steps == {
        "problems": [],
        "install": ["rdma-core=2.0", "perftest=2.0"],
        "os_tools": TOOLS,
        "hold": True,
        "act": True,
    }


def test_an_installed_package_is_pinned_at_its_version_not_the_newer_candidate():
    packages = converged(perftest=pkg("1.0", candidate="9.0", held=True))
    steps = rdma_fabric.package_steps(host="n1", stack_packages=STACK, os_packages=TOOLS, packages=packages)
    assert (steps["install"], steps["act"]) == ([], False)


def test_a_broken_stack_package_is_installed_again_with_every_tool():
    packages = converged(perftest=pkg("1.0", held=True, broken=True))
    steps = rdma_fabric.package_steps(host="n1", stack_packages=STACK, os_packages=TOOLS, packages=packages)
    assert (steps["install"], steps["os_tools"], steps["hold"]) == (["perftest=1.0"], TOOLS, True)


def test_a_lifted_hold_is_the_only_step():
    packages = converged(perftest=pkg("1.0", held=False))
    steps = rdma_fabric.package_steps(host="n1", stack_packages=STACK, os_packages=TOOLS, packages=packages)
    assert steps == {"problems": [], "install": [], "os_tools": [], "hold": True, "act": True}


def test_a_missing_tool_alone_is_installed_without_the_stack():
    packages = converged(ethtool=pkg(None, candidate="6.1"))
    steps = rdma_fabric.package_steps(host="n1", stack_packages=STACK, os_packages=TOOLS, packages=packages)
    assert steps == {"problems": [], "install": [], "os_tools": ["ethtool"], "hold": False, "act": True}


@pytest.mark.parametrize("absent", [{"perftest": pkg(None, candidate=None)}, {"ethtool": None}, {}])
def test_a_package_no_source_carries_is_a_problem_before_any_change(absent):
    packages = converged(**absent) if absent else {}
    steps = rdma_fabric.package_steps(host="n1", stack_packages=STACK, os_packages=TOOLS, packages=packages)
    carried = [name for name in STACK + TOOLS if absent == {} or name in absent]
    assert steps == {
        "problems": [
            f"n1: no configured package source carries {', '.join(carried)}. Nothing was changed. Fix: Debian's main "
            "component in the package sources (stage 1 writes them), then run again."
        ],
        "install": [],
        "os_tools": [],
        "hold": False,
        "act": False,
    }
