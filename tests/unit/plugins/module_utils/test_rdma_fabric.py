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
