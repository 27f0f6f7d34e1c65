"""The nvidia_driver filters as Jinja calls them (through FilterModule): documented, plain types in, errors named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import nvidia_driver
from ansible_collections.gpuops.bringup.plugins.module_utils import pci

FILTERS = nvidia_driver.FilterModule().filters()
FILTER_DIR = Path(nvidia_driver.__file__).parent
ROOT = FILTER_DIR.parents[1]
TABLE = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "vars" / "Debian-13.yml").read_text())[
    "__nvidia_driver_distribution"
]


class TaggedStr(str):
    """Stands in for the tagged str subclass Ansible hands a filter from a template."""


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_documentation_matches_the_filter(name):
    doc = yaml.safe_load((FILTER_DIR / f"{name}.yml").read_text())
    assert doc["DOCUMENTATION"]["name"] == name
    assert yaml.safe_load(doc["EXAMPLES"])


PREFLIGHT_VALUES = {"nvidia_driver_source": TaggedStr("distribution"), "nvidia_driver_branch": TaggedStr(""),
                    "nvidia_driver_version": TaggedStr(""), "nvidia_driver_flavor": TaggedStr("auto"),
                    "nvidia_driver_fabricmanager": TaggedStr("auto"), "nvidia_driver_dcgm": False,
                    "nvidia_driver_drain": TaggedStr("auto")}  # fmt: skip
PREFLIGHT_DATA = {"supported": {"distribution": {"debian": ["13"]}}, "tables": {"distribution": TABLE},
                  "cuda_repo_os": "debian12", "cuda_repo_key": {"file": "3bf863cc.pub"}}  # fmt: skip
DATA = {
    "persistenced_package": "nvidia-persistenced",
    "kubelet_unit": "kubelet.service",
    "persistenced_unit": "nvidia-persistenced.service",
    "daemon_units": ["nvidia-persistenced.service"],
}


def test_nvidia_driver_preflight_through_jinja_types():
    capture = ROOT / "tests" / "fixtures" / "pci" / "pcie-l40s-x4.derived.txt"
    facts = pci.inventory(pci.parse_lspci_nn(capture.read_text()))
    node = {"os": {"id": TaggedStr("debian"), "major": TaggedStr("13"), "package_manager": TaggedStr("apt")}}
    result = FILTERS["nvidia_driver_preflight"](node, TaggedStr("n1"), facts, PREFLIGHT_VALUES, {}, PREFLIGHT_DATA)
    assert (result["problems"], result["branch"], result["flavor"]["flavor"]) == ([], "535", "proprietary")


def test_nvidia_driver_packages_preflight_through_jinja_types():
    node = {"os": {"id": "debian", "major": "13", "package_manager": "apt"}}
    resolved = FILTERS["nvidia_driver_preflight"](node, "n1", {"gpus": []}, PREFLIGHT_VALUES, {}, PREFLIGHT_DATA)
    reads = {"os": {**node, "kernel": {"running": TaggedStr("6.12.117+deb13-amd64"), "installed": []}},
             "pci": {"gpus": []}, "driver": {}, "packages": {}, "repository": {"skipped": True}}  # fmt: skip
    result = FILTERS["nvidia_driver_packages_preflight"](resolved, TaggedStr("n1"), reads, PREFLIGHT_VALUES, DATA)
    # No package source: the plan's problem and the kernel's, with the host's name.
    assert [p.split(" ")[:2] for p in result["problems"]] == [["n1:", "Debian"], ["n1:", "this"]]


READS = {"os": {}, "pci": {}, "driver": {}, "packages": {}, "repository": {}}
VERIFY_READS = dict.fromkeys(["driver", "os", "packages", "gpu", "audit", "pci_gpus"])


@pytest.mark.parametrize(
    ("name", "args", "what"),
    [
        ("nvidia_driver_preflight", ({}, "n1", None, {}, {}, {}), "pci_facts' pci"),
        ("nvidia_driver_preflight", ({}, "n1", {}, {}, {}, []), "the role's data for the OS"),
        ("nvidia_driver_packages_preflight", ({}, "n1", [], {}, {}), "preflight's reads"),
        ("nvidia_driver_packages_preflight", ({}, "n1", {**READS, "pci": None}, {}, {}), "pci_facts' pci"),
        ("nvidia_driver_packages_preflight", (None, "n1", READS, {}, {}), "nvidia_driver_preflight's result"),
        ("nvidia_driver_table_packages", ("535",), "the branch table"),
        ("nvidia_driver_package_problems", ({}, None), "package_info's packages"),
        ("nvidia_driver_verify", ([], "n1", {}), "verify's reads"),
        ("nvidia_driver_verify", (VERIFY_READS, "n1", None), "what preflight judged"),
        ("nvidia_driver_verify", ({}, "n1", {}), "verify's reads with driver, os, packages, gpu, audit, pci_gpus"),
        (
            "nvidia_driver_verify",
            (dict.fromkeys(["driver", "os", "packages", "gpu", "audit", "pci_gpus"]), "n1", {"persistenced": {}}),
            "what preflight judged with plan, flavor",
        ),
    ],
)
def test_a_wrong_input_names_what_was_expected(name, args, what):
    with pytest.raises(AnsibleFilterError, match=f"gpuops.bringup.{name} needs {what}"):
        FILTERS[name](*args)


def test_nvidia_driver_table_packages_lists_every_package_once():
    names = FILTERS["nvidia_driver_table_packages"](TABLE["branches"])
    assert names == sorted(set(names))
    assert {"nvidia-tesla-535-kernel-dkms", "nvidia-open-kernel-dkms", "nvidia-smi", "libnvidia-tesla-535-ml1"} <= set(
        names
    )
    assert "nvidia-persistenced" not in names


def test_the_old_names_route_to_the_new_ones_with_a_deprecation():
    """The four filters were driver_* before the stage had one name (nvidia_driver): meta/runtime.yml sends the old
    names to the new ones, with a deprecation ansible-core prints where a template uses one."""
    routing = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["plugin_routing"]["filter"]
    assert sorted(routing) == ["driver_gpu_problems", "driver_package_problems", "driver_table_packages",
                               "driver_unload_outcome"]  # fmt: skip
    for old, entry in routing.items():
        assert old not in FILTERS
        assert entry["redirect"] == f"gpuops.bringup.nvidia_{old}" and f"nvidia_{old}" in FILTERS
        assert entry["deprecation"]["removal_version"] == "1.0.0"
        assert f"Use gpuops.bringup.nvidia_{old}" in entry["deprecation"]["warning_text"]
