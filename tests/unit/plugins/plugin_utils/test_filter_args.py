"""The filters' shared argument check: a wrong type names the filter and the argument."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import driver
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import mapping


def test_a_mapping_passes_through():
    value = {"gpus": []}
    assert mapping(value, "pci_facts' pci", "driver_flavor") is value


def test_another_type_names_the_filter_and_the_argument():
    with pytest.raises(
        AnsibleFilterError, match=r"^gpuops.bringup.driver_kernels needs os_facts' gpuops_os \(a mapping\), got list$"
    ):
        driver.driver_kernels([], {}, {})
