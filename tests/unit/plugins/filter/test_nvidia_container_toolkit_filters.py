"""The container toolkit's preflight filter as Jinja calls it (through FilterModule): plain types in, errors named."""

from __future__ import annotations

import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import nvidia_container_toolkit

PREFLIGHT = nvidia_container_toolkit.FilterModule().filters()["nvidia_container_toolkit_preflight"]
TABLES = {
    "supported": {"debian": ["12", "13"]},
    "architectures": ["amd64"],
    "units": {"containerd": "containerd.service"},
    "tomli": {},
}
NODE = {
    "os": {"id": "debian", "major": "13", "package_arch": "amd64"},
    "capabilities": {"own_kernel": False},
    "units": {"containerd.service": {"exists": True}},
}
VARIABLES = {
    "nvidia_container_toolkit_version": "1.17.8-1",
    "nvidia_container_toolkit_runtimes": ["containerd"],
    "nvidia_container_toolkit_default_for": [],
    "nvidia_container_toolkit_cdi": True,
    "nvidia_container_toolkit_repo_url": "https://nvidia.github.io/libnvidia-container/stable/deb",
    "nvidia_container_toolkit_key_url": "https://nvidia.github.io/libnvidia-container/gpgkey",
    "nvidia_container_toolkit_key_fingerprint": "C95B321B61E88C1809C4F759DDCAE044F796ECB0",
    "nvidia_container_toolkit_key_sha256": "",
}
READS = {"runtimes": [], "gpu": {"failed": False, "msg": "nvidia-smi was not found"}}


class TaggedStr(str):
    """Stands in for the tagged str subclass Ansible hands a filter from a template."""


def test_tagged_strings_are_read_as_strings():
    variables = {**VARIABLES, "nvidia_container_toolkit_version": TaggedStr("1.17.8-1")}
    result = PREFLIGHT(NODE, TaggedStr("n1"), variables, TABLES, READS)
    assert result["problems"] == [] and result["gpus_answer"] is False


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ((None, "n1", VARIABLES, TABLES, READS), "needs os_facts' gpuops_os (a mapping), got NoneType"),
        ((NODE, "n1", VARIABLES, TABLES, {"gpu": {}}), "needs the node's reads with runtimes"),
        ((NODE, "n1", VARIABLES, {"supported": {}}, READS), "needs the role's tables with architectures, units, tomli"),
        ((NODE, "n1", VARIABLES, TABLES, {**READS, "runtimes": {}}), "needs the runtime checks' results (a list)"),
    ],
)
def test_a_wrong_argument_is_named(arguments, said):
    with pytest.raises(
        AnsibleFilterError, match=re.escape(f"gpuops.bringup.nvidia_container_toolkit_preflight {said}")
    ):
        PREFLIGHT(*arguments)


VERIFY = nvidia_container_toolkit.FilterModule().filters()["nvidia_container_toolkit_verify"]
V_READS = {
    "packages": {"nvidia-container-toolkit": {"installed": "1.17.8-1", "held": True}},
    "ctk": {"version": "1.17.8", "errors": [], "cdi_devices": [],
            "runtimes": {"containerd": {"default": "runc",
                                        "runtimes": {"nvidia": {"binary": "/usr/bin/nvidia-container-runtime"}}}}},
    "units": {"containerd.service": {"active": True}},
    "smoke": None,
}  # fmt: skip
V_SETTINGS = {"version": "1.17.8-1", "runtimes": ["containerd"], "default_for": [], "cdi": True, "smoke_image": ""}
V_JUDGED = {
    "runtime_path": "/usr/bin/nvidia-container-runtime", "units": {"containerd": "containerd.service"},
    "own_kernel": False, "gpu": {}, "gpus_answer": False, "live": False, "smoke_runtime": "containerd",
}  # fmt: skip


def test_verify_reads_a_boolean_given_as_a_string():
    """nvidia_container_toolkit_cdi=false on the command line arrives as a string."""
    found = VERIFY(V_READS, TaggedStr("n1"), {**V_SETTINGS, "cdi": "false"}, V_JUDGED)
    assert found["failures"] == [] and not any("CDI" in reason for reason in found["not_applicable"])
    assert any("CDI" in reason for reason in VERIFY(V_READS, "n1", V_SETTINGS, V_JUDGED)["not_applicable"])


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (({**V_READS, "smoke": None, "units": None}, "n1", V_SETTINGS, V_JUDGED), "needs os_facts' units (a mapping)"),
        (({"packages": {}}, "n1", V_SETTINGS, V_JUDGED), "needs verify's reads with ctk, units, smoke"),
        ((V_READS, "n1", {"version": "1"}, V_JUDGED), "needs the role's settings with runtimes, default_for, cdi"),
        ((V_READS, "n1", V_SETTINGS, {}), "needs what preflight judged with runtime_path, units, own_kernel"),
    ],
)
def test_verify_names_a_wrong_argument(arguments, said):
    with pytest.raises(AnsibleFilterError, match=re.escape(f"gpuops.bringup.nvidia_container_toolkit_verify {said}")):
        VERIFY(*arguments)
