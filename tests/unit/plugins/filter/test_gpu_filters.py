"""The GPU catalog filters, gpu_arch and cuda_min_driver, as Jinja calls them (through FilterModule)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.plugins.test.core import version_compare

from ansible_collections.gpuops.bringup.plugins.filter import gpu

FILTERS = gpu.FilterModule().filters()
FILTER_DIR = Path(gpu.__file__).parent
EXTEND = (
    "add its PCI device id and nvidia-smi name to DEVICES in plugins/module_utils/gpu_catalog.py "
    "(source: the Compatible GPUs table in NVIDIA/open-gpu-kernel-modules README.md)"
)


class TaggedStr(str):
    """Stands in for the tagged str subclass Ansible hands a filter from a template."""


@pytest.mark.parametrize("name", ["gpu_arch", "cuda_min_driver"])
def test_documentation_matches_the_filter(name):
    doc = yaml.safe_load((FILTER_DIR / f"{name}.yml").read_text())
    assert doc["DOCUMENTATION"]["name"] == name
    assert name in FILTERS
    # The examples are YAML a reader can paste.
    assert yaml.safe_load(doc["EXAMPLES"])


# Every product name in the target set, as nvidia-smi prints it.
@pytest.mark.parametrize(
    ("name", "architecture", "capability", "open_modules"),
    [
        ("Tesla V100-SXM2-32GB", "volta", "7.0", "unsupported"),
        ("Tesla V100-SXM2-16GB", "volta", "7.0", "unsupported"),
        ("Tesla V100-PCIE-32GB", "volta", "7.0", "unsupported"),
        ("Tesla V100S-PCIE-32GB", "volta", "7.0", "unsupported"),
        ("Tesla T4", "turing", "7.5", "supported"),
        ("NVIDIA A100-SXM4-80GB", "ampere", "8.0", "supported"),
        ("NVIDIA A100-SXM4-40GB", "ampere", "8.0", "supported"),
        ("NVIDIA A100 80GB PCIe", "ampere", "8.0", "supported"),
        ("NVIDIA A100-PCIE-40GB", "ampere", "8.0", "supported"),
        ("NVIDIA A30", "ampere", "8.0", "supported"),
        ("NVIDIA A10", "ampere", "8.6", "supported"),
        ("NVIDIA A10G", "ampere", "8.6", "supported"),
        ("NVIDIA A16", "ampere", "8.6", "supported"),
        ("NVIDIA A2", "ampere", "8.6", "supported"),
        ("NVIDIA A40", "ampere", "8.6", "supported"),
        ("NVIDIA L4", "ada", "8.9", "supported"),
        ("NVIDIA L40", "ada", "8.9", "supported"),
        ("NVIDIA L40S", "ada", "8.9", "supported"),
        ("NVIDIA RTX 6000 Ada Generation", "ada", "8.9", "supported"),
        ("NVIDIA H100 80GB HBM3", "hopper", "9.0", "supported"),
        ("NVIDIA H100 PCIe", "hopper", "9.0", "supported"),
        ("NVIDIA H100 NVL", "hopper", "9.0", "supported"),
        ("NVIDIA H200", "hopper", "9.0", "supported"),
        ("NVIDIA H200 NVL", "hopper", "9.0", "supported"),
        ("NVIDIA H20", "hopper", "9.0", "supported"),
        ("NVIDIA GH200 480GB", "hopper", "9.0", "required"),
        ("NVIDIA B200", "blackwell", "10.0", "required"),
        ("NVIDIA GB200", "blackwell", "10.0", "required"),
        ("NVIDIA B300 SXM6 AC", "blackwell", "10.3", "required"),
        ("NVIDIA GB300", "blackwell", "10.3", "required"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "blackwell", "12.0", "required"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "blackwell", "12.0", "required"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "blackwell", "12.0", "required"),
    ],
)
def test_gpu_arch_by_name(name, architecture, capability, open_modules):
    entry = FILTERS["gpu_arch"](TaggedStr(name))
    assert entry["product"] == name
    assert (entry["architecture"], entry["compute_capability"], entry["open_modules"]) == (
        architecture,
        capability,
        open_modules,
    )


@pytest.mark.parametrize(
    ("value", "architecture", "open_modules"),
    [
        # nvidia-smi --query-gpu=pci.device_id
        ("0x233010DE", "hopper", "supported"),
        ("0x290110DE", "blackwell", "required"),
        ("0x1DB510DE", "volta", "unsupported"),
        ("0x234210DE", "hopper", "required"),
        # lspci -n, a bare id, and YAML's 0x2330 (an int)
        ("10de:26b9", "ada", "supported"),
        ("20b2", "ampere", "supported"),
        (0x2330, "hopper", "supported"),
    ],
)
def test_gpu_arch_by_pci_device_id(value, architecture, open_modules):
    entry = FILTERS["gpu_arch"](value)
    assert (entry["architecture"], entry["open_modules"]) == (architecture, open_modules)


def test_gpu_arch_picks_the_kernel_module_flavour_of_a_mixed_node():
    # What the nvidia_driver role does with the GPUs present.
    flavours = {FILTERS["gpu_arch"](device)["open_modules"] for device in ["0x233010DE", "0x290110DE", "0x1DB510DE"]}
    assert flavours == {"supported", "required", "unsupported"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NVIDIA Foo", f"'NVIDIA Foo' is not a product name in the GPU catalog; {EXTEND}"),
        (TaggedStr("Quadro RTX 6000"), f"'Quadro RTX 6000' is not a product name in the GPU catalog; {EXTEND}"),
        ("0x123410DE", f"PCI device id 0x1234 ('0x123410DE') is not in the GPU catalog; {EXTEND}"),
        (
            2330,
            "PCI device id 0x091a is not in the GPU catalog (an unquoted 2330 in YAML is a decimal number; "
            f"write '2330' or 0x2330 for the hex id); {EXTEND}",
        ),
        (None, "expected a product name or a PCI device id, got NoneType"),
        (["NVIDIA H100 80GB HBM3"], "expected a product name or a PCI device id, got list"),
    ],
)
def test_gpu_arch_unknown_is_a_filter_error(value, message):
    with pytest.raises(AnsibleFilterError) as caught:
        FILTERS["gpu_arch"](value)
    assert caught.value.message == f"gpuops.bringup.gpu_arch: {message}"


@pytest.mark.parametrize(
    ("args", "driver"),
    [
        (("12.8",), "570.26"),
        ((TaggedStr("12.8"),), "570.26"),
        (("12.4",), "550.54.14"),
        (("12.4 Update 1",), "550.54.15"),
        (("12.4.1",), "550.54.15"),
        ((12.4,), "550.54.14"),
        (("13.0",), "580.65.06"),
        (("13.4",), "615"),
        (("11.0",), "450.51.05"),
        (("12.8", "toolkit"), "570.26"),
        (("12.8", "minor"), "525.60.13"),
        (("11.4 Update 2", "minor"), "450.80.02"),
        (("13.3", "minor"), "580"),
    ],
)
def test_cuda_min_driver(args, driver):
    assert FILTERS["cuda_min_driver"](*args) == driver


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("12.7",),
            "CUDA '12.7' is not in NVIDIA's table of toolkit driver versions; "
            "known: CUDA 11.0 RC (11.0.1) to 13.4 Update 1 (13.4.2)",
        ),
        (
            ("12.8 Update 2",),
            "CUDA '12.8 Update 2' is not in NVIDIA's table of toolkit driver versions; "
            "known 12.8 releases: 12.8 GA (12.8.0), 12.8 Update 1 (12.8.1)",
        ),
        (
            ("twelve",),
            "CUDA version 'twelve' is not of the form 12.8, 12.8 GA, 12.8 Update 1 or 12.8.1 "
            "(major.minor means the GA release)",
        ),
        ((None,), "CUDA version must be a string such as '12.8', got NoneType"),
        (("12.8", "forward"), "compatibility must be one of toolkit, minor, got 'forward'"),
    ],
)
def test_cuda_min_driver_errors(args, message):
    with pytest.raises(AnsibleFilterError) as caught:
        FILTERS["cuda_min_driver"](*args)
    assert caught.value.message == f"gpuops.bringup.cuda_min_driver: {message}"


@pytest.mark.parametrize(
    ("driver", "cuda", "runs"),
    [
        # "cuda_toolkit_version 12.8 needs driver >= 570.26; nvidia_driver_branch is 550"
        ("550.54.15", "12.8", False),
        ("570.26", "12.8", True),
        ("570.124.06", "12.8", True),
        ("570.124.06", "12.8 Update 1", True),
        ("570.86.15", "12.8 Update 1", False),
        ("535.274.02", "12.2 Update 2", True),
        ("610.43.02", "13.4", False),
        ("615.71.09", "13.4", True),
    ],
)
def test_the_version_test_compares_what_cuda_min_driver_returns(driver, cuda, runs):
    # The documented preflight: driver is version(cuda | cuda_min_driver, '>=').
    assert version_compare(driver, FILTERS["cuda_min_driver"](cuda), ">=") is runs
