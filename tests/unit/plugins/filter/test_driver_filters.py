"""The driver filters as Jinja calls them (through FilterModule): documented, plain types in, errors named."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import driver
from ansible_collections.gpuops.bringup.plugins.module_utils import pci

FILTERS = driver.FilterModule().filters()
FILTER_DIR = Path(driver.__file__).parent
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


def test_driver_flavor_through_jinja_types():
    capture = ROOT / "tests" / "fixtures" / "pci" / "pcie-l40s-x4.derived.txt"
    facts = pci.inventory(pci.parse_lspci_nn(capture.read_text()))
    result = FILTERS["driver_flavor"](facts, TaggedStr("auto"), TaggedStr("535"), TABLE["branches"], TABLE["where"])
    assert (result["flavor"], result["problem"]) == ("proprietary", None)


def test_driver_flavor_refuses_an_unknown_request():
    with pytest.raises(AnsibleFilterError, match="requested must be auto, open or proprietary, got 'both'"):
        FILTERS["driver_flavor"]({}, "both", "535", TABLE["branches"], TABLE["where"])


@pytest.mark.parametrize(
    ("name", "args", "what"),
    [
        ("driver_flavor", (None, "auto", "535", {}, "x"), "pci_facts' pci"),
        ("driver_plan", ([], {}, "open", "", [], "x", "535"), "package_info's packages"),
        ("driver_kernels", ({}, [], {}), "package_info's packages"),
        ("driver_install_problems", ({}, [], {}, [], [], False), "the branch table"),
        ("driver_table_packages", ("535",), "the branch table"),
        ("driver_package_problems", ({}, None), "package_info's packages"),
        ("driver_repository_info", ({}, None), "repository_index's packages"),
    ],
)
def test_a_wrong_input_names_what_was_expected(name, args, what):
    with pytest.raises(AnsibleFilterError, match=f"gpuops.bringup.{name} needs {what}"):
        FILTERS[name](*args)


def test_driver_table_packages_lists_every_package_once():
    names = FILTERS["driver_table_packages"](TABLE["branches"])
    assert names == sorted(set(names))
    assert {"nvidia-tesla-535-kernel-dkms", "nvidia-open-kernel-dkms", "nvidia-smi", "libnvidia-tesla-535-ml1"} <= set(
        names
    )
    assert "nvidia-persistenced" not in names


def test_driver_repository_info_gives_the_repositorys_versions_only():
    # Synthetic: Debian 12's nvidia-smi installed and available, the repository's two 550 versions.
    info = {"nvidia-smi": {"installed": "535.261.03-1", "available": ["535.261.03-1"], "held": True}}
    merged = FILTERS["driver_repository_info"](info, {"nvidia-smi": ["550.144.03-1", "550.163.01-1"]})
    assert merged["nvidia-smi"] == {
        "installed": "535.261.03-1",
        "available": ["550.144.03-1", "550.163.01-1"],
        "candidate": "550.163.01-1",
        "held": True,
        "installed_elsewhere": True,
    }
    assert info["nvidia-smi"]["available"] == ["535.261.03-1"], "the input is not changed"
