"""The filters' shared argument check: a wrong type names the filter and the argument."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.bringup.plugins.filter import nvidia_driver
from ansible_collections.gpuops.bringup.plugins.plugin_utils.filter_args import facts_of, mapping


def test_a_mapping_passes_through():
    value = {"gpus": []}
    assert mapping(value, "pci_facts' pci", "nvidia_driver_preflight") is value


def test_another_type_names_the_filter_and_the_argument():
    with pytest.raises(
        AnsibleFilterError,
        match=r"^gpuops.bringup.nvidia_driver_preflight needs os_facts' gpuops_os \(a mapping\), got list$",
    ):
        nvidia_driver.nvidia_driver_preflight([], "n1", {}, {}, {}, {})


def test_facts_of_keeps_the_hosts_order_and_drops_the_missing_and_null():
    hostvars = {"a": {"x": {"node": "a"}}, "b": {}, "c": {"x": None}, "d": {"x": {"node": "d"}}}
    assert facts_of(["d", "c", "b", "a"], hostvars, "x") == [{"node": "d"}, {"node": "a"}]
    assert facts_of(None, hostvars, "x") == []
