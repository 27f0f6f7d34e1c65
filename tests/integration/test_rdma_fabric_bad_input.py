"""rdma_fabric's bad input fails in preflight, before any change, with a message naming the variable, the value and
the fix.

The machine running the tests is a Debian 12 VM without an NVIDIA driver or RDMA device: the variable cases, DOCA on
an OS its release does not serve (Debian 12 with DOCA 3.1.0) and GPUDirect RDMA without a driver run there. Bench
nodes: one with Ubuntu 24.04's os-release shows DOCA's repository resolved for that OS (which the bench's mirror does
not hold); one with Rocky Linux 9.3's the inbox stack refused off apt; a plain Debian 12 one meets the stand-in of
DOCA 2.9.0's debian12.5 repository in the mirror with a wrong key pin and a profile it lacks. Each case gives the
node a hardware profile as the inventory would (gpuops_hardware).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from preflight_harness import MIRROR, CaseRun, bench_nodes, local_case_tests, node_cases

PLAYBOOK = Path(__file__).with_name("rdma_fabric_preflight.yml")
TAG = "rdma_fabric_preflight"
GROUP = "rdma-preflight"
FINGERPRINT = "0" * 40  # any well-formed value: these cases stop before a key is fetched

NO_FABRIC = {"profile": "bench_container", "infiniband": {"ports": 0, "rate_gbps": 0, "link_layer": "InfiniBand"}}
NDR = {"profile": "hgx_h100_8gpu", "infiniband": {"ports": 8, "rate_gbps": 400, "link_layer": "InfiniBand"}}


def given(hardware=None, **variables):
    """The case's variables on a node of the given profile (no fabric unless named), GPUDirect RDMA off unless set."""
    return {"gpuops_hardware": hardware or NO_FABRIC, "rdma_fabric_peermem": False, **variables}


LOCAL_CASES = {
    "peermem_without_rdma_stack": (
        given(rdma_fabric_stack="none", rdma_fabric_peermem=True),
        [
            "rdma_fabric_peermem is true but rdma_fabric_stack is none: nvidia-peermem registers GPU memory with an "
            "RDMA stack, and there is none. Fix: rdma_fabric_stack: inbox (or doca), or rdma_fabric_peermem: false."
        ],
    ),
    "no_stack_on_a_fabric_node": (
        given(NDR, rdma_fabric_stack="none"),
        [
            "rdma_fabric_stack is none but the hardware profile hgx_h100_8gpu expects 8 RDMA ports. Fix: "
            "rdma_fabric_stack: inbox (or doca)."
        ],
    ),
    "doca_without_key_fingerprint": (
        given(rdma_fabric_stack="doca"),
        [
            "rdma_fabric_stack is doca but rdma_fabric_doca_key_fingerprint is empty: the DOCA repository is never "
            "trusted without its signing key pinned."
        ],
    ),
    "doca_release_without_table": (
        given(rdma_fabric_stack="doca", rdma_fabric_doca_version="2.0.0", rdma_fabric_doca_key_fingerprint=FINGERPRINT),
        [
            'rdma_fabric_doca_version is "2.0.0", a DOCA release this collection has no table for. Fix: one of '
            "2.9.0, 3.1.0."
        ],
    ),
    "doca_on_an_unsupported_os": (
        given(rdma_fabric_stack="doca", rdma_fabric_doca_key_fingerprint=FINGERPRINT),
        [
            "rdma_fabric_stack is doca with rdma_fabric_doca_version 3.1.0, which NVIDIA publishes for ubuntu22.04, "
            "ubuntu24.04; {host} runs Debian GNU/Linux 12 (bookworm) (debian12). Nothing was changed. Fix: "
            "rdma_fabric_stack: inbox (the OS's own rdma-core), or a DOCA release published for this OS."
        ],
    ),
    "peermem_without_driver": (
        given(rdma_fabric_peermem=True),
        [
            "rdma_fabric_peermem is true but {host} has no NVIDIA driver built by DKMS for its kernels",
            "nvidia-peermem comes with the driver's build. Nothing was changed. Fix: run playbooks/nvidia_driver.yml "
            "first (site.yml runs it before this stage), or rdma_fabric_peermem: false for a node without GPUDirect "
            "RDMA.",
        ],
    ),
    "interface_kind_unknown": (
        given(rdma_fabric_interfaces=[{"name": "ib0", "kind": "infiniband"}]),
        [
            'rdma_fabric_interfaces[0] (ib0) has kind "infiniband". Fix: kind: ipoib (an InfiniBand port) or '
            "kind: roce (an Ethernet port)."
        ],
    ),
    "interface_address_without_prefix": (
        given(rdma_fabric_interfaces=[{"name": "ens1np0", "kind": "roce", "address": "10.20.0.12"}]),
        [
            'rdma_fabric_interfaces[0] (ens1np0) has address "10.20.0.12", not an IPv4 address with its prefix length. '
            "Fix: address: 10.10.0.11/16, or no address."
        ],
    ),
    "interface_mtu_too_large_for_roce": (
        given(rdma_fabric_interfaces=[{"name": "ens1np0", "kind": "roce", "mtu": 65520}]),
        ["rdma_fabric_interfaces[0] (ens1np0) has mtu 65520. Fix: 1280 to 9216, or no mtu for the default."],
    ),
    "interface_twice": (
        given(rdma_fabric_interfaces=[{"name": "ib0", "kind": "ipoib"}, {"name": "ib0", "kind": "ipoib"}]),
        ["rdma_fabric_interfaces names ib0 more than once. Fix: one entry per interface."],
    ),
    "dscp_out_of_range": (
        given(rdma_fabric_roce_dscp=64),
        ["rdma_fabric_roce_dscp is 64: out of range: from 0 to 63. Fix: a DSCP value from 0 to 63, e.g. 26."],
    ),
    "perftest_peer_is_this_node": (
        # The case's host is named after the case.
        given(NDR, rdma_fabric_perftest_peer="perftest_peer_is_this_node"),
        [
            'rdma_fabric_perftest_peer is "{host}": that is this node itself. Nothing was changed. Fix: an '
            'inventory host of the same hardware profile in this play, or rdma_fabric_perftest_peer: "".'
        ],
    ),
    "perftest_peer_not_in_the_play": (
        given(NDR, rdma_fabric_perftest_peer="gpu-node-99"),
        ['rdma_fabric_perftest_peer is "gpu-node-99": not a host of this play. Nothing was changed.'],
    ),
    # A storage node's profile: fabric, no GPU (the peer, not in this play, is a problem of its own).
    "perftest_gpudirect_required_without_gpus": (
        given(
            dict(NDR, profile="storage_ndr", gpu={"count": 0}),
            rdma_fabric_perftest_peer="gpu-node-99",
            rdma_fabric_perftest_gpudirect="required",
        ),
        [
            "rdma_fabric_perftest_gpudirect is required but the hardware profile of {host} (storage_ndr) has no GPU "
            "(gpuops_hardware.gpu.count is 0): there is no GPU memory to measure with. Nothing was changed. Fix: a "
            "peer and a node of GPU profiles, or rdma_fabric_perftest_gpudirect: auto (host memory there, named in "
            "the result)."
        ],
    ),
    "perftest_gpudirect_unknown": (
        given(NDR, rdma_fabric_perftest_peer="gpu-node-99", rdma_fabric_perftest_gpudirect="yes"),
        ["value of rdma_fabric_perftest_gpudirect must be one of: auto, required, host, got: yes"],
    ),
    "stack_unknown": (
        given(rdma_fabric_stack="mlnx_ofed"),
        ["value of rdma_fabric_stack must be one of: inbox, doca, none, got: mlnx_ofed"],
    ),
    # This machine runs neither NetworkManager nor netplan.
    "network_tool_not_on_the_node": (
        given(rdma_fabric_interfaces=[{"name": "ibp26s0", "kind": "ipoib"}], rdma_fabric_network_tool="networkmanager"),
        [
            "rdma_fabric_interfaces names 1 interfaces for networkmanager (rdma_fabric_network_tool: networkmanager), "
            "but {host} has no nmcli. Nothing was changed. Fix: rdma_fabric_network_tool set to the tool that owns "
            "this node's network (auto picks it), or install that tool."
        ],
    ),
    # Independent problems of the variables, the peer, the OS, the network tool and the driver in one failure, so
    # one round of fixes clears the node.
    "every_problem_at_once": (
        given(
            rdma_fabric_stack="doca",
            rdma_fabric_peermem=True,
            rdma_fabric_interfaces=[{"name": "ib0", "kind": "infiniband"}],
            rdma_fabric_network_tool="networkmanager",
            rdma_fabric_perftest_peer="gpu-node-99",
        ),
        [
            "rdma_fabric_stack is doca but rdma_fabric_doca_key_fingerprint is empty: the DOCA repository is never "
            "trusted without its signing key pinned.",
            ' | rdma_fabric_interfaces[0] (ib0) has kind "infiniband".',
            ' | rdma_fabric_perftest_peer is "gpu-node-99": not a host of this play.',
            " | rdma_fabric_stack is doca with rdma_fabric_doca_version 3.1.0, which NVIDIA publishes for ubuntu22.04, "
            "ubuntu24.04; {host} runs Debian GNU/Linux 12 (bookworm) (debian12).",
            " | rdma_fabric_interfaces names 1 interfaces for networkmanager (rdma_fabric_network_tool: "
            "networkmanager), but {host} has no nmcli.",
            " | rdma_fabric_peermem is true but {host} has no NVIDIA driver built by DKMS for its kernels",
        ],
    ),
    "network_tool_unknown": (
        given(rdma_fabric_network_tool="ifupdown"),
        [
            "value of rdma_fabric_network_tool must be one of: auto, systemd-networkd, netplan, networkmanager, got: "
            "ifupdown"
        ],
    ),
}


CONTROL = given(rdma_fabric_interfaces=[{"name": "ibp26s0", "kind": "ipoib", "address": "10.10.0.11/16"}])
# Every local case, and the control, in one run.
case_run, test_bad_input_fails_in_preflight = local_case_tests(PLAYBOOK, TAG, LOCAL_CASES, {"control": CONTROL})


def test_valid_input_passes_preflight_and_changes_nothing(case_run: CaseRun) -> None:
    """The control: the defaults without GPUDirect RDMA pass here, so the failures above come from the input."""
    case_run.assert_passes_unchanged("control")


ROCKY_OS_RELEASE = Path(__file__).resolve().parents[1] / "fixtures" / "os-release" / "rocky-9.3"


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    specs = [{"name": name, "image": "debian12"} for name in ("ubuntu", "rocky", "debian")]
    with bench_nodes(tmp_path_factory, GROUP, specs) as started:
        started.ubuntu("ubuntu")
        # A real Rocky Linux 9.3 os-release (tests/fixtures/os-release, public) in place of Debian's.
        started.sh("rocky", "rm -f /etc/os-release")
        subprocess.run(["podman", "cp", str(ROCKY_OS_RELEASE), f"{started.containers['rocky']}:/etc/os-release"],
                       check=True)  # fmt: skip
        yield started.inventory


def test_inbox_stack_on_a_dnf_system(node_run: CaseRun) -> None:
    node_run.assert_fails_with(
        "inbox_stack_on_a_dnf_system",
        [
            "rdma_fabric_stack is inbox, which this collection installs with apt (Debian, Ubuntu: rdma-core, "
            "ibverbs-providers, ibverbs-utils, infiniband-diags, perftest); {host} runs Rocky Linux 9.3 (Blue Onyx) "
            "(package manager dnf). Nothing was changed.",
            "Fix: an apt-based node, or install the RDMA stack with the OS's own tools and set "
            "rdma_fabric_stack: none.",
        ],
    )


DOCA = {"rdma_fabric_stack": "doca", "rdma_fabric_doca_version": "2.9.0", "gpuops_mirror_url": MIRROR}


def bench_fingerprint() -> str:
    """The key the bench signs its stand-in repositories with (production pins NVIDIA's)."""
    mirror = Path(__file__).resolve().parents[2] / ".bench" / "mirror" / "mirror.json"
    return json.loads(mirror.read_text())["local_repo_key_fingerprint"]


def doca_node_cases() -> dict:
    """case: (node, variables, expected). ubuntu (Ubuntu 24.04) gets DOCA 2.9.0's ubuntu24.04 directory, which the
    bench's mirror does not hold; debian (Debian 12) gets debian12.5, which it holds."""
    bench = bench_fingerprint()
    return {
        "repository_of_the_nodes_os": (
            "ubuntu",
            {"rdma_fabric_doca_key_fingerprint": FINGERPRINT},
            [
                "could not download the repository's package index from "
                f"{MIRROR}/linux.mellanox.com/public/repo/doca/2.9.0/ubuntu24.04/x86_64/Packages.gz: HTTP Error 404: "
                "Not Found (status 404); check the URL and, with an offline mirror, that it holds this repository",
            ],
        ),
        "key_other_than_the_pin": (
            "debian",
            {"rdma_fabric_doca_key_fingerprint": FINGERPRINT},
            [
                f"{{host}}: the signing key {MIRROR}/linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub holds "
                f"{bench} with SHA-256 ",
                f"but rdma_fabric_doca_key_fingerprint is {FINGERPRINT}: refusing to trust it. Nothing was changed. "
                "Fix: point gpuops_mirror_url at a mirror holding NVIDIA's key, or correct the pins.",
            ],
        ),
        "profile_the_release_lacks": (
            "debian",
            {"rdma_fabric_doca_key_fingerprint": bench, "rdma_fabric_doca_profile": "doca-all"},
            [
                "{host}: rdma_fabric_doca_profile is doca-all, which the DOCA 2.9.0 repository "
                f"({MIRROR}/linux.mellanox.com/public/repo/doca/2.9.0/debian12.5/x86_64/) does not carry (it carries "
                "doca-ofed). Nothing was changed. Fix: rdma_fabric_doca_profile: doca-ofed, or copy that profile into "
                "the mirror."
            ],
        ),
    }


@pytest.fixture(scope="module")
def node_run(tmp_path_factory, nodes: Path) -> CaseRun:
    """The node cases in one run: inbox on a dnf system, and DOCA's."""
    doca = doca_node_cases()
    cases = {case: (node, given(**DOCA, **variables)) for case, (node, variables, _expected) in doca.items()}
    hosts = node_cases(nodes, {**cases, "inbox_stack_on_a_dnf_system": ("rocky", given())})
    return CaseRun(PLAYBOOK, TAG, tmp_path_factory.mktemp("nodes"), hosts)


@pytest.mark.parametrize("case", ["repository_of_the_nodes_os", "key_other_than_the_pin", "profile_the_release_lacks"])
def test_doca_bad_input_on_a_node(node_run: CaseRun, case: str) -> None:
    node_run.assert_fails_with(case, doca_node_cases()[case][2])
