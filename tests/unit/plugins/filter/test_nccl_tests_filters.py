"""The nccl_tests preflight filter as Jinja calls it (through FilterModule): plain types in, errors named."""

from __future__ import annotations

import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import nccl_tests

PREFLIGHT = nccl_tests.FilterModule().filters()["nccl_tests_preflight"]
PARAMS = {
    "source_url": "https://github.com/NVIDIA/nccl-tests/archive/v2.16.3.tar.gz",
    "source_checksum": "sha256:" + "a" * 64,
    "source_commit": "",
    "gates": {},
    "benchmarks": ["all_reduce_perf"],
    "gpudirect_rdma": "auto",
    "args": [],
    "multinode_group": "",
    "pairs": False,
    "nccl_source": "distribution",
    "nccl_version": "",
    "user": "gpuops-nccl",
}
INVENTORY = {
    "hardware": {"profile": "hgx_h100_8gpu", "gpu": {"count": 8}},
    "published": {"hgx_h100_8gpu": 460},
    "profiles": ["hgx_h100_8gpu"],
    "groups": {"all": ["n1"]},
    "play_hosts": ["n1"],
}
TABLES = {"supported": {"distribution": {"debian": ["13"]}}, "nccl_packages": ["libnccl2"], "mpi_packages": []}
READS = {
    "account": None,
    "os": {"id": "debian", "major": "13"},
    "sources": {"nccl": "2.22.3-1-1", "openmpi": "5.0.7-1", "packages": {"libnccl2": {"available": ["2.22.3-1-1"]}}},
    "gpu": {"ansible_facts": {"gpu": {"count": 8}}},
}


class TaggedStr(str):
    """Stands in for the tagged str subclass Ansible hands a filter from a template."""


def test_tagged_strings_are_read_as_strings():
    account = [TaggedStr(f) for f in ("x", "0", "0", "", "/root", "/bin/bash")]
    result = PREFLIGHT({**PARAMS, "user": TaggedStr("toor")}, TaggedStr("n1"), INVENTORY, TABLES,
                       {**READS, "account": account})  # fmt: skip
    assert [type(p) for p in result["problems"]] == [str]
    assert result["problems"][0].startswith("n1: nccl_tests_user toor is uid 0")


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ((None, "n1", INVENTORY, TABLES, READS), "needs the role's variables (a mapping), got NoneType"),
        (
            (PARAMS, "n1", {"hardware": {}}, TABLES, READS),
            "needs the inventory's values with published, profiles, groups",
        ),
        ((PARAMS, "n1", INVENTORY, {}, READS), "needs the role's tables with supported, nccl_packages, mpi_packages"),
        ((PARAMS, "n1", INVENTORY, TABLES, {**READS, "gpu": None}), "needs gpu_facts' registered result (a mapping)"),
    ],
)
def test_a_wrong_argument_is_named(arguments, said):
    with pytest.raises(AnsibleFilterError, match=re.escape(f"gpuops.bringup.nccl_tests_preflight {said}")):
        PREFLIGHT(*arguments)
