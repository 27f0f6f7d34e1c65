"""The rdma_fabric_* filters as Jinja calls them (through FilterModule): the preflight's arguments as templates hand
them over."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import rdma_fabric

FILTERS = rdma_fabric.FilterModule().filters()
NODE = {"os": {"name": "Debian GNU/Linux 13 (trixie)", "id": "debian", "version_id": "13", "package_manager": "apt"}}
VARIABLES = {
    "rdma_fabric_stack": "inbox",
    "rdma_fabric_peermem": False,
    "rdma_fabric_doca_version": "3.1.0",
    "rdma_fabric_doca_key_fingerprint": "",
    "rdma_fabric_doca_key_sha256": "",
    "rdma_fabric_doca_profile": "doca-ofed",
    "rdma_fabric_interfaces": [],
    "rdma_fabric_network_tool": "auto",
    "rdma_fabric_perftest_peer": "",
    "rdma_fabric_perftest_gpudirect": "auto",
}
HARDWARE = {"profile": "bench_container", "infiniband": {"ports": 0, "rate_gbps": 0, "link_layer": "InfiniBand"}}
READS = {"fabric": {"peermem": {"status": "no_driver"}}, "network": None, "doca_index": None, "devices": None}
PEER = {"in_play": False, "hardware": None, "devices": None}
TABLES = {"doca_releases": {"3.1.0": ["ubuntu24.04"]}, "doca_dir": "", "network_tools": {}}


def test_the_filters_are_registered():
    assert sorted(FILTERS) == [
        "rdma_fabric_packages", "rdma_fabric_paths", "rdma_fabric_ports", "rdma_fabric_preflight",
        "rdma_fabric_steps", "rdma_fabric_verify_problems",
    ]  # fmt: skip


def test_preflight_of_a_node_without_a_fabric():
    found = FILTERS["rdma_fabric_preflight"](NODE, "n1", VARIABLES, HARDWARE, READS, PEER, TABLES)
    assert found == {"problems": [], "reboot_reasons": [], "doca_version": None, "network_tool": "", "hcas": []}


@pytest.mark.parametrize("position", range(6))
def test_preflight_names_an_argument_that_is_no_mapping(position):
    arguments = [NODE, VARIABLES, HARDWARE, READS, PEER, TABLES]
    arguments[position] = []
    node, *rest = arguments
    with pytest.raises(AnsibleFilterError, match=r"gpuops\.bringup\.rdma_fabric_preflight needs .* \(a mapping\)"):
        FILTERS["rdma_fabric_preflight"](node, "n1", *rest)


@pytest.mark.parametrize("position", range(3))
def test_verify_names_an_argument_that_is_no_mapping(position):
    arguments = [{"capabilities": {}}, {}, {}]
    arguments[position] = None
    node, settings, reads = arguments
    with pytest.raises(
        AnsibleFilterError, match=r"gpuops\.bringup\.rdma_fabric_verify_problems needs .* \(a mapping\)"
    ):
        FILTERS["rdma_fabric_verify_problems"](node, "n1", settings, reads)


def test_paths_and_steps_name_a_missing_setting():
    with pytest.raises(AnsibleFilterError, match=r"gpuops\.bringup\.rdma_fabric_paths needs the role's settings with"):
        FILTERS["rdma_fabric_paths"]({"tool": ""}, "n1", "nvidia-peermem", {}, [])
    with pytest.raises(AnsibleFilterError, match=r"gpuops\.bringup\.rdma_fabric_steps needs the role's settings with"):
        FILTERS["rdma_fabric_steps"]({}, {}, True, [])


def test_paths_name_a_state_that_is_no_mapping():
    settings = dict.fromkeys(rdma_fabric.SETTINGS, "")
    with pytest.raises(
        AnsibleFilterError, match=r"rdma_fabric_paths needs the state decided in preflight \(a mapping\)"
    ):
        FILTERS["rdma_fabric_paths"](settings, "n1", "nvidia-peermem", None, [])


def test_packages_name_an_argument_of_the_wrong_kind():
    with pytest.raises(AnsibleFilterError, match=r"rdma_fabric_packages needs package_info's packages \(a mapping\)"):
        FILTERS["rdma_fabric_packages"]([], "n1", ["rdma-core"], ["ethtool"])
    with pytest.raises(
        AnsibleFilterError, match=r"rdma_fabric_packages needs the stack's packages \(a list\), got str"
    ):
        FILTERS["rdma_fabric_packages"]({}, "n1", "rdma-core", ["ethtool"])
    with pytest.raises(AnsibleFilterError, match=r"rdma_fabric_packages needs the OS tools \(a list\), got str"):
        FILTERS["rdma_fabric_packages"]({}, "n1", ["rdma-core"], "ethtool")
